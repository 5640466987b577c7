-- Assent's PostgreSQL roles with least privilege: the schema's owner, which `assent migrate` connects as, and the
-- servers' role, which reads and writes rows but cannot create, alter or drop anything (docs/DEPLOY.md).
--
--   psql -v owner=assent_owner -v server=assent_server -v database=assent -f deploy/postgres/roles.sql
--
-- Run it as a superuser (or a role with CREATEROLE and CREATEDB) on PostgreSQL 15 or newer, then give each role its
-- password (\password assent_owner, \password assent_server) or certificate. Tables a later `assent migrate`
-- creates are granted to the servers' role by the default privileges below, with nothing to run again.

CREATE ROLE :"owner" LOGIN;
CREATE ROLE :"server" LOGIN;
CREATE DATABASE :"database" OWNER :"owner";
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"database" TO :"server";

\connect :"database"

-- Since PostgreSQL 15 the public schema belongs to the database's owner and others may not create in it; say so
-- anyway, for a cluster upgraded from an older version.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"server";

-- Rows only: no TRUNCATE, REFERENCES or TRIGGER, no DDL.
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"server";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"server";
-- Tables the owner already has (running this file again on a migrated database).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"server";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"server";
