-- The text of the documents a message carries (src/parse/extract/), searched by plain words and
-- by `attachment:`, in a column of its own so that a result can say where the words are. Rows
-- written before have no such text: they are removed, and the indexing replica adds every message
-- again at its next start (it compares the search index with the index and adds what is missing).
ALTER TABLE search_docs ADD COLUMN attachments tsvector NOT NULL DEFAULT '';
CREATE INDEX search_docs_attachments ON search_docs USING gin (attachments);
DELETE FROM search_docs;
UPDATE search_version SET n = n + 1;
