-- Passages of texts too long for one tsvector (src/postgres/search.rs): PostgreSQL keeps a word's
-- positions only up to 16,383 and 256 a word, so a field past that is also kept cut into passages
-- that each hold their words at their places, and a phrase far into a long document is found
-- there. `field` is the text column's place in the search's list of them (0 subject … 6
-- attachments), `n` the passage's number. A message's passages go with its row.
CREATE TABLE search_passages (
    id integer NOT NULL REFERENCES search_docs (id) ON DELETE CASCADE,
    field smallint NOT NULL,
    n smallint NOT NULL,
    words tsvector NOT NULL,
    PRIMARY KEY (id, field, n)
);
CREATE INDEX search_passages_words ON search_passages USING gin (words);
-- The messages with a passage of one of `fields` that matches `q`, through the index on `words`.
-- PostgreSQL costs a test of a tsvector as a cheap one and would rather read every passage (each
-- a large value kept apart, to be fetched and decompressed: 250 ms for 32,000 passages, against
-- 4 ms through the index); a function can have it not do so for its own statement only.
CREATE FUNCTION search_passages_matching(fields smallint[], q tsquery) RETURNS SETOF integer
LANGUAGE sql STABLE STRICT PARALLEL SAFE SET enable_seqscan = off
AS $$ SELECT DISTINCT id FROM search_passages WHERE field = ANY(fields) AND words @@ q $$;
-- Rows written before hold such fields without their passages: those rows are removed, and the
-- indexing replica adds their messages again at its next start (it compares the search index with
-- the index and adds what is missing). A field needs passages when a word of it reached the last
-- exact position or its 256th place.
DELETE FROM search_docs d
WHERE EXISTS (
    SELECT 1
    FROM unnest(ARRAY[d.subject, d.sender, d.recipients, d.cc, d.body, d.filename, d.attachments]) AS f(words),
        unnest(f.words) AS u
    WHERE array_length(u.positions, 1) >= 256 OR u.positions[array_length(u.positions, 1)] >= 16381
);
UPDATE search_version SET n = n + 1;
