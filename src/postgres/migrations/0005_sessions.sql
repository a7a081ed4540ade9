-- Sign-ins (see src/auth/session.rs): the SHA-256 of each session id, never the id itself, the
-- user it stands for, a digest of their credential then, and when it ends (seconds since the
-- epoch). `data` keeps what an OpenID Connect sign-in under way needs when it comes back.
CREATE TABLE sessions (
    id bytea PRIMARY KEY,
    name text NOT NULL,
    tag text NOT NULL,
    expires bigint NOT NULL,
    data text
);
CREATE INDEX sessions_expires ON sessions (expires);
