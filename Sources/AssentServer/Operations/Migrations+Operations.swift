/// The operations' schema: their tables, templates and the trigger that writes a status change's outbox row and
/// audit event in the same statement (versions 2, 12, 16 and 42).
extension Migrations {
    /// The audit event of an operation's status change, written by the same trigger as the outbox row.
    static let auditInsert = auditInsert(withApplication: false)

    /// ``auditInsert``, naming the operation's application from version 33 on, and from version 38 on the actor
    /// the change names (`status_actor`: who cancelled) before the status's usual one.
    static func auditInsert(withApplication: Bool, statusActor: Bool = false) -> String {
        let usual = "CASE NEW.status WHEN 'EXPIRED' THEN 'system' WHEN 'CANCELED' THEN 'operator' ELSE 'device' END"
        return """
            INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail\(withApplication ? ", application_id" : ""))
            VALUES (NEW.updated_at, 'operation.' || lower(NEW.status), NEW.activation_id, NEW.user_id,
                \(statusActor ? "COALESCE(NEW.status_actor, \(usual))" : usual),
                'Operation ' || NEW.id || ' is ' || NEW.status || COALESCE(' (' || NEW.status_reason || ')', '') || '.'\
            \(withApplication ? ", NEW.application_id" : ""))
            """
    }

    /// Operations, operation templates and the webhook outbox. The outbox row (and the audit event) of a status
    /// change is written by a trigger, so the change and its event are one atomic statement on both databases.
    static func schemaV2(blob: String, bigint: String, serial: String) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS operations (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                user_id TEXT,
                name TEXT NOT NULL,
                data TEXT NOT NULL,
                status TEXT NOT NULL,
                status_reason TEXT,
                content TEXT NOT NULL,
                signature_type TEXT NOT NULL,
                failed_attempts \(bigint) NOT NULL,
                max_failed_attempts \(bigint) NOT NULL,
                proximity_seed \(blob),
                offline_nonce TEXT,
                offline_totp TEXT,
                activation_id TEXT,
                template TEXT,
                created_at \(bigint) NOT NULL,
                expires_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL,
                finished_at \(bigint),
                version \(bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS operations_user_status ON operations(user_id, status, created_at)",
            "CREATE INDEX IF NOT EXISTS operations_status_expiry ON operations(status, expires_at)",
            """
            CREATE TABLE IF NOT EXISTS operation_templates (
                name TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                updated_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS webhook_outbox (
                id \(serial),
                operation_id TEXT NOT NULL,
                status TEXT NOT NULL,
                status_reason TEXT,
                at \(bigint) NOT NULL,
                attempts \(bigint) NOT NULL DEFAULT 0,
                next_attempt_at \(bigint) NOT NULL,
                locked_until \(bigint) NOT NULL DEFAULT 0,
                state TEXT NOT NULL DEFAULT 'pending',
                last_error TEXT,
                finished_at \(bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox(state, next_attempt_at)",
        ]
    }

    /// Version 12: fewer pages written per status change. Measured under approval load, each approval wrote about
    /// eight pages to the log, most of them one random leaf per index; two of those leaves bought nothing:
    /// - the outbox's subject index served only a look-up for diagnostics and tests (``SQLStore/outboxItems(subject:)``
    ///   now reads the outbox through), yet each message put an entry on a random leaf of it;
    /// - the finished-time index held a NULL for every pending operation, which each approval deleted from a random
    ///   leaf; it now holds finished operations only (what the console's per-hour counts read), so an approval only
    ///   appends to its newest leaf, shared by the approvals of a batch.
    static let pagesV12 = [
        "DROP INDEX IF EXISTS outbox_subject",
        "DROP INDEX IF EXISTS operations_finished",
        "CREATE INDEX IF NOT EXISTS operations_finished ON operations(finished_at) WHERE finished_at IS NOT NULL",
    ]

    /// Version 42: the operations that hold a sealed proximity seed, by id. The key ring's re-seal looks for values
    /// not sealed under the current key in key order; without this index, on a table of finished operations where few
    /// have a seed, each process's first pass after a start read the whole table to find them.
    static let proximitySeedsV42 = [
        "CREATE INDEX IF NOT EXISTS operations_proximity_seed ON operations(id) WHERE proximity_seed IS NOT NULL"
    ]

    /// Version 43, PostgreSQL: operations partitioned by month of `created_at`, so that retention drops a month's
    /// partition instead of deleting its rows (SQLite keeps one table, and retention deletes there).
    ///
    /// The existing table becomes the first partition, from the oldest row to the first month boundary after both the
    /// newest row and now: its indexes, triggers, foreign keys and grants are copied to the new parent table first
    /// (the triggers are dropped from it, the parent's are cloned onto every partition), and its primary key is
    /// widened to `(id, created_at)`, as a partitioned table's key must hold the partition's column. Attaching it reads
    /// the table once and builds that key's index, under the table's lock. Then
    /// ``operationPartitionsFunction`` makes the months ahead. One statement, so it is done whole or not at all; a
    /// second process running it finds the table partitioned and does nothing.
    static func operationPartitionsV43(_ dialect: Dialect) -> [String] {
        guard dialect == .postgres else { return [] }
        return [
            operationPartitionBoundsFunction, operationPartitionsFunction,
            """
            DO $$
            DECLARE
                boundary bigint;
                statement text;
                statements text[] := '{}';
                renames text[] := '{}';
                triggers text[] := '{}';
                grants record;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('assent.operations.partitions'));
                IF (SELECT relkind FROM pg_class WHERE oid = 'operations'::regclass) = 'p' THEN RETURN; END IF;
                LOCK TABLE operations IN ACCESS EXCLUSIVE MODE;
                SELECT (extract(epoch FROM (date_trunc('month', to_timestamp(greatest(coalesce(max(created_at), 0),
                    (extract(epoch FROM now()) * 1000)::bigint) / 1000.0) AT TIME ZONE 'UTC') + interval '1 month')
                    AT TIME ZONE 'UTC') * 1000)::bigint
                INTO boundary FROM operations;
                \(collectIndexes(of: "operations"))
                FOR statement IN
                    SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = 'operations'::regclass AND NOT t.tgisinternal
                LOOP triggers := triggers || statement; END LOOP;
                FOR statement IN
                    SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
                    WHERE t.tgrelid = 'operations'::regclass AND NOT t.tgisinternal
                LOOP statements := statements || statement; END LOOP;
                FOR statement IN
                    SELECT format('ALTER TABLE operations ADD CONSTRAINT %I %s', c.conname, pg_get_constraintdef(c.oid))
                    FROM pg_constraint c WHERE c.conrelid = 'operations'::regclass AND c.contype = 'f'
                LOOP statements := statements || statement; END LOOP;
                \(renameBeforePartitions("operations"))
                FOREACH statement IN ARRAY triggers LOOP
                    EXECUTE format('DROP TRIGGER %I ON operations_before_partitions', statement);
                END LOOP;
                CREATE TABLE operations (LIKE operations_before_partitions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
                    PARTITION BY RANGE (created_at);
                ALTER TABLE operations ADD PRIMARY KEY (id, created_at);
                FOREACH statement IN ARRAY statements LOOP EXECUTE statement; END LOOP;
                \(copyGrantsDroppingKey("operations"))
                EXECUTE format('ALTER TABLE operations ATTACH PARTITION operations_before_partitions '
                    'FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
                PERFORM assent_operation_partitions((extract(epoch FROM now()) * 1000)::bigint, NULL);
            END
            $$
            """,
        ]
    }

    /// PL/pgSQL for a table about to be partitioned: collects the definitions of its indexes but the primary key into
    /// `statements` (to run on the new parent) and the names of all of them into `renames`.
    static func collectIndexes(of table: String) -> String {
        """
        FOR statement IN
                    SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
                    WHERE i.indrelid = '\(table)'::regclass AND NOT i.indisprimary
                LOOP statements := statements || statement; END LOOP;
                FOR statement IN
                    SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = '\(table)'::regclass
                LOOP renames := renames || statement; END LOOP;
        """
    }

    /// PL/pgSQL: renames `table` to `<table>_before_partitions` and its indexes (named in `renames`) after it, so that
    /// the parent made next takes their names.
    static func renameBeforePartitions(_ table: String) -> String {
        """
        ALTER TABLE \(table) RENAME TO \(table)_before_partitions;
                FOREACH statement IN ARRAY renames LOOP
                    EXECUTE format('ALTER INDEX %I RENAME TO %I', statement, left(statement || '_before_partitions', 63));
                END LOOP;
        """
    }

    /// PL/pgSQL: gives the new parent `table` every grant `<table>_before_partitions` had (variable `grants`), and
    /// drops the old table's primary key, which gives way to the parent's (attaching builds it on the old table).
    static func copyGrantsDroppingKey(_ table: String) -> String {
        """
        FOR grants IN
                    SELECT a.privilege_type, a.grantee FROM pg_class c, aclexplode(c.relacl) a
                    WHERE c.oid = '\(table)_before_partitions'::regclass AND a.grantee <> c.relowner
                LOOP
                    IF grants.grantee = 0 THEN
                        EXECUTE format('GRANT %s ON \(table) TO PUBLIC', grants.privilege_type);
                    ELSE
                        EXECUTE format('GRANT %s ON \(table) TO %I', grants.privilege_type,
                            (SELECT rolname FROM pg_roles WHERE oid = grants.grantee));
                    END IF;
                END LOOP;
                FOR statement IN
                    SELECT conname FROM pg_constraint
                    WHERE conrelid = '\(table)_before_partitions'::regclass AND contype = 'p'
                LOOP
                    EXECUTE format('ALTER TABLE \(table)_before_partitions DROP CONSTRAINT %I', statement);
                END LOOP;
        """
    }

    /// `assent_operation_partition_bounds()`, PostgreSQL: each partition of `operations` with its range, in Unix
    /// milliseconds (a null low: from the first value).
    static let operationPartitionBoundsFunction = partitionBoundsFunction(
        "assent_operation_partition_bounds", of: "operations")

    /// A PostgreSQL function answering each partition of `table` (partitioned by a `bigint` range) with its range:
    /// a null low for one from the first value, both null for the default partition.
    static func partitionBoundsFunction(_ name: String, of table: String) -> String {
        """
        CREATE OR REPLACE FUNCTION \(name)()
        RETURNS TABLE (part_name text, part_low bigint, part_high bigint)
        LANGUAGE sql STABLE AS $$
            SELECT c.relname::text,
                (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''?(-?[0-9]+)'))[1]::bigint,
                (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''?(-?[0-9]+)'))[1]::bigint
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = '\(table)'::regclass
        $$
        """
    }

    /// `assent_operation_partitions(now, cutoff)`, PostgreSQL: makes the partitions of the month `now` (Unix
    /// milliseconds) falls in and the two after it where none covers them yet, and drops every partition whose range
    /// ends at or before `cutoff` (null: none) and a day before the database's own clock, and that holds no pending
    /// operation; answers how many it made and dropped (a server whose clock runs ahead drops nothing recent). It runs with its owner's rights (the schema owner's, who ran the migration), so that the server's
    /// role, which may not create or drop tables, keeps the partitions; it takes a lock, so servers calling it at
    /// once take turns. Partitions are named by their month (`operations_2026_12`).
    static let operationPartitionsFunction = """
        CREATE OR REPLACE FUNCTION assent_operation_partitions(now_ms bigint, cutoff_ms bigint,
            OUT made integer, OUT dropped integer)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
        DECLARE
            month timestamp;
            month_low bigint;
            month_high bigint;
            part record;
            busy boolean;
        BEGIN
            made := 0;
            dropped := 0;
            PERFORM pg_advisory_xact_lock(hashtext('assent.operations.partitions'));
            FOR step IN 0..2 LOOP
                month := date_trunc('month', to_timestamp(now_ms / 1000.0) AT TIME ZONE 'UTC')
                    + make_interval(months => step);
                month_low := (extract(epoch FROM month AT TIME ZONE 'UTC') * 1000)::bigint;
                month_high := (extract(epoch FROM (month + interval '1 month') AT TIME ZONE 'UTC') * 1000)::bigint;
                CONTINUE WHEN EXISTS (SELECT 1 FROM assent_operation_partition_bounds()
                    WHERE coalesce(part_low, month_low) <= month_low AND month_low < part_high);
                SELECT least(month_high, min(part_low)) INTO month_high FROM assent_operation_partition_bounds()
                    WHERE part_low > month_low;
                EXECUTE format('CREATE TABLE %I PARTITION OF operations FOR VALUES FROM (%s) TO (%s)',
                    'operations_' || to_char(month, 'YYYY_MM'), month_low, month_high);
                made := made + 1;
            END LOOP;
            IF cutoff_ms IS NOT NULL THEN
                -- Never a month that ended less than a day ago by the database's clock, whatever the caller's says.
                cutoff_ms := least(cutoff_ms, (extract(epoch FROM now()) * 1000)::bigint - 86400000);
                FOR part IN SELECT * FROM assent_operation_partition_bounds() WHERE part_high <= cutoff_ms LOOP
                    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE status = ''PENDING'')', part.part_name)
                        INTO busy;
                    CONTINUE WHEN busy;
                    EXECUTE format('DROP TABLE %I', part.part_name);
                    dropped := dropped + 1;
                END LOOP;
            END IF;
        END
        $$
        """

    /// Version 16: number matching — an operation's mode, its number and the choices the phone offers; the TFA
    /// policy's mode for push sign-ins (existing policies get the default, `choose`) and its push-bombing limits (JSON;
    /// absent: the server's).
    static func numberMatchingV16(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return [
            "ALTER TABLE operations \(add) number_matching TEXT",
            "ALTER TABLE operations \(add) matching_number \(dialect.bigint)",
            "ALTER TABLE operations \(add) number_choices TEXT",
            "ALTER TABLE tfa_policies \(add) number_matching TEXT",
            "ALTER TABLE tfa_policies \(add) push_limits TEXT",
        ]
    }
}
