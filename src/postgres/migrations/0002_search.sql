-- The full-text index of the shared backend (src/postgres/search.rs): one row a message. The
-- tsvectors hold the words of mailshelf's own analyzer (src/search/tokenizer.rs), built in Rust
-- and sent in tsvector's text form, so that PostgreSQL's parser, dictionaries and locale never
-- split or stem them differently from the embedded engine.
CREATE TABLE search_docs (
    id integer PRIMARY KEY,
    subject tsvector NOT NULL,
    sender tsvector NOT NULL,
    recipients tsvector NOT NULL,
    cc tsvector NOT NULL,
    body tsvector NOT NULL,
    filename tsvector NOT NULL,
    -- Seconds since the epoch; the smallest bigint for a message without a date.
    date bigint NOT NULL,
    size bigint NOT NULL,
    attachment boolean NOT NULL,
    -- The folder and every folder above it, lower-cased (`folder:` finds any of them).
    folders text[] NOT NULL,
    -- Lower-cased, no slashes at the ends (`label:`).
    labels text[] NOT NULL,
    -- The List-Id, lower-cased; NULL when the message came through no list.
    list text
);

CREATE INDEX search_docs_subject ON search_docs USING gin (subject);
CREATE INDEX search_docs_sender ON search_docs USING gin (sender);
CREATE INDEX search_docs_recipients ON search_docs USING gin (recipients);
CREATE INDEX search_docs_cc ON search_docs USING gin (cc);
CREATE INDEX search_docs_body ON search_docs USING gin (body);
CREATE INDEX search_docs_filename ON search_docs USING gin (filename);
CREATE INDEX search_docs_folders ON search_docs USING gin (folders);
CREATE INDEX search_docs_labels ON search_docs USING gin (labels);
-- Results come newest first: a page of a broad query reads this backwards and stops early.
CREATE INDEX search_docs_by_date ON search_docs (date, id);
CREATE INDEX search_docs_by_size ON search_docs (size);
CREATE INDEX search_docs_by_list ON search_docs (list);
