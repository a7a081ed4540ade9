-- The index: what the embedded store keeps in index.redb (src/store/), one table per kind of row,
-- plus what replicas need to agree: ids from sequences, and a feed of changes.

-- Settings drawn once: the key names are hashed under ("name_key").
CREATE TABLE meta (key text PRIMARY KEY, value bytea NOT NULL);

-- Entry ids, handed out to each replica in blocks of 256 (a block's start is nextval).
CREATE SEQUENCE entry_ids AS bigint INCREMENT BY 256 MINVALUE 0 START WITH 0;

-- Every index entry, by id, in the embedded store's encoding (postcard).
CREATE TABLE entries (id integer PRIMARY KEY, data bytea NOT NULL);

-- (kind, keyed hash of a name, entry): every lookup of a name to entries.
CREATE TABLE links (kind smallint NOT NULL, hash bigint NOT NULL, id integer NOT NULL,
                    PRIMARY KEY (kind, hash, id));
CREATE INDEX links_of_entry ON links (id);

-- The first 128 bits of BLAKE3 over a message's bytes -> its entry.
CREATE TABLE hashes (hash bytea PRIMARY KEY, id integer NOT NULL);
CREATE INDEX hashes_of_entry ON hashes (id);

-- Every listed message with its place in the list (newest first) and its folder.
CREATE TABLE listed (id integer PRIMARY KEY, rank bigint NOT NULL, folder integer NOT NULL);
CREATE INDEX listed_in_order ON listed (rank, id) INCLUDE (folder);

CREATE TABLE folders (id serial PRIMARY KEY, path text NOT NULL UNIQUE);
CREATE TABLE labels (label text PRIMARY KEY, count bigint NOT NULL);

-- What was indexed from each source file (postcard), so a restart re-reads only what changed.
CREATE TABLE sources (key text PRIMARY KEY, state bytea NOT NULL);

-- Uploads, kept here whole: no replica's disk holds what a user gave.
CREATE TABLE uploads (name text PRIMARY KEY, bytes bytea NOT NULL);

-- The feed of changes: every entry a commit wrote or removed, numbered in commit order (writers
-- hold an advisory lock until they commit). Replicas follow it to learn what others committed.
CREATE SEQUENCE change_seq AS bigint;
CREATE TABLE changes (seq bigint PRIMARY KEY, id integer NOT NULL);
