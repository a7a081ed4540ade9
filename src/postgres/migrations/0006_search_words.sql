-- Words are folded further (decomposed accents joined to their letters, compatibility forms,
-- Greek accents and final sigma, Russian ё): rows written before hold the old terms. They are
-- removed, and the indexing replica adds every message again at its next start (it compares the
-- search index with the index and adds what is missing).
DELETE FROM search_docs;
UPDATE search_version SET n = n + 1;
