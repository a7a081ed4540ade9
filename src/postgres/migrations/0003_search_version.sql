-- A number every write to search_docs raises, in its own transaction: counts of matches (the
-- costly part of a broad search) are kept by each replica for as long as it has not moved.
CREATE TABLE search_version (n bigint NOT NULL);
INSERT INTO search_version VALUES (0);
