-- Thai, Lao, Khmer and Myanmar are indexed letter by letter (each with its marks), so a word is
-- found inside the run it is written in: rows written before hold whole runs as one word. They
-- are removed, and the indexing replica adds every message again at its next start (it compares
-- the search index with the index and adds what is missing).
DELETE FROM search_docs;
UPDATE search_version SET n = n + 1;
