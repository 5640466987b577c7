/// The schema of the tamper-evident audit trail (version 21).
extension Migrations {
    /// Version 21: each audit row's place in the chain (`seq`, given by the sealer after the row is written) and its
    /// hashes; the signed checkpoints; the audit signing key (sealed). Rows written before are sealed first, in
    /// the order they were written.
    static func auditChainV21(_ dialect: Dialect) -> [String] {
        let add =
            dialect == .sqlite
            ? "ALTER TABLE audit_events ADD COLUMN" : "ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS"
        return [
            "\(add) seq \(dialect.bigint)",
            "\(add) content_hash \(dialect.blob)",
            "\(add) prev_hash \(dialect.blob)",
            "\(add) chain_hash \(dialect.blob)",
            "CREATE UNIQUE INDEX IF NOT EXISTS audit_events_seq ON audit_events(seq)",
            "CREATE INDEX IF NOT EXISTS audit_events_unsealed ON audit_events(id) WHERE seq IS NULL",
            "CREATE INDEX IF NOT EXISTS audit_events_at ON audit_events(at)",
            """
            CREATE TABLE IF NOT EXISTS audit_checkpoints (
                seq \(dialect.bigint) PRIMARY KEY,
                hash \(dialect.blob) NOT NULL,
                at \(dialect.bigint) NOT NULL,
                signature \(dialect.blob) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS audit_keys (
                id TEXT PRIMARY KEY,
                private_key \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL
            )
            """,
        ]
    }

    /// Version 33: each audit row names the application it is about (none for the organisation's own actions), so
    /// that an operator or key limited to applications reads their rows only; the operation trigger writes it.
    /// Rows written before name none (what they are about is not always known).
    static func auditApplicationsV33(_ dialect: Dialect) -> [String] {
        let add =
            dialect == .sqlite
            ? "ALTER TABLE audit_events ADD COLUMN" : "ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS"
        return [
            "\(add) application_id TEXT",
            "CREATE INDEX IF NOT EXISTS audit_events_application ON audit_events(application_id, id)",
        ] + operationStatusTrigger(dialect, auditApplication: true)
    }

    /// Version 38: an operation's status change names who made it when it is not the usual one (a cancellation by
    /// `operator:<name>`, `api-key:<name>` or the user), and its audit event records that actor.
    static func operationStatusActorV38(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return ["ALTER TABLE operations \(add) status_actor TEXT"]
            + operationStatusTrigger(dialect, auditApplication: true, statusActor: true)
    }
}

/// The audit rows partitioned on PostgreSQL (version 44).
extension Migrations {
    /// Version 44, PostgreSQL only: `audit_events` becomes a table partitioned by ranges of `seq`, the row's place
    /// in the chain, which is the order the rows were sealed in; rows not sealed yet (no `seq`) wait in the default
    /// partition, `audit_events_pending`, and sealing moves each into its range. Not by time: a key of time could not
    /// keep `seq` unique over the whole table, and rows written by servers whose clocks differ would not fall into
    /// ranges of the chain, so dropping a month could leave a hole in the chain. The table as it was becomes the
    /// first partition, up to the newest sealed row; its unsealed rows move to the default partition; its key on `id`
    /// becomes an index (a partitioned table's keys must hold `seq`, which is empty until sealing), and the sequence
    /// that numbers `id` now belongs to the new table. ``auditPartitionsFunction`` makes the ranges ahead and drops
    /// the ones pruning has passed. One statement, done whole or not at all; a second run finds the table
    /// partitioned and does nothing.
    static func auditPartitionsV44(_ dialect: Dialect) -> [String] {
        guard dialect == .postgres else { return [] }
        return [
            partitionBoundsFunction("assent_audit_partition_bounds", of: "audit_events"), auditPartitionsFunction,
            """
            DO $$
            DECLARE
                boundary bigint;
                statement text;
                statements text[] := '{}';
                renames text[] := '{}';
                grants record;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('assent.audit.partitions'));
                IF (SELECT relkind FROM pg_class WHERE oid = 'audit_events'::regclass) = 'p' THEN RETURN; END IF;
                LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE;
                SELECT coalesce(max(seq), 0) + 1 INTO boundary FROM audit_events;
                \(collectIndexes(of: "audit_events"))
                \(renameBeforePartitions("audit_events"))
                CREATE TABLE audit_events (LIKE audit_events_before_partitions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
                    PARTITION BY RANGE (seq);
                EXECUTE format('ALTER SEQUENCE %s OWNED BY audit_events.id',
                    pg_get_serial_sequence('audit_events_before_partitions', 'id'));
                CREATE INDEX audit_events_id ON audit_events (id);
                FOREACH statement IN ARRAY statements LOOP EXECUTE statement; END LOOP;
                \(copyGrantsDroppingKey("audit_events"))
                CREATE TABLE audit_events_pending PARTITION OF audit_events DEFAULT;
                INSERT INTO audit_events SELECT * FROM audit_events_before_partitions WHERE seq IS NULL;
                DELETE FROM audit_events_before_partitions WHERE seq IS NULL;
                EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION audit_events_before_partitions '
                    'FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
                PERFORM assent_audit_partitions(NULL);
            END
            $$
            """,
        ]
    }

    /// `assent_audit_partitions(prune_through)`, PostgreSQL, with its owner's rights (the servers' role may not create
    /// or drop tables) and a lock, so that servers calling it at once take turns:
    /// - It keeps room ahead of the chain's head: while less than one partition's worth of `seq` is left above the
    ///   newest sealed row, it adds a range after the last one, named by its first `seq`
    ///   (`audit_events_from_12001`). A range holds about a month of rows: as many as were sealed in the last 31
    ///   days, at least 100. Sealed rows that found no range (a sealer of an older build outran the ranges) move
    ///   into the new range from the default partition.
    /// - Given `prune_through` (a checkpoint's `seq`: rows up to it may go), it drops every range that ends at or
    ///   before it, and that holds no row written in the last day by the database's clock (a server whose clock runs
    ///   ahead cannot take recent rows with it). The chain then begins right after the dropped ranges; a checkpoint
    ///   must anchor it, so the rows from there up to the first checkpoint are deleted one by one (at most a
    ///   checkpoint's worth). Rows of a range not wholly passed wait for it.
    /// - It answers how many ranges it made and dropped, how many rows it deleted, and `high`: the first `seq` no
    ///   range holds (a sealer goes no further).
    static let auditPartitionsFunction = """
        CREATE OR REPLACE FUNCTION assent_audit_partitions(prune_through bigint,
            OUT made integer, OUT dropped integer, OUT deleted bigint, OUT high bigint)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
        DECLARE
            head bigint;
            size bigint;
            bound bigint;
            aligned bigint;
            recent bigint := (extract(epoch FROM now()) * 1000)::bigint - 86400000;
            part record;
            name text;
            busy boolean;
        BEGIN
            made := 0;
            dropped := 0;
            deleted := 0;
            PERFORM pg_advisory_xact_lock(hashtext('assent.audit.partitions'));
            SELECT coalesce(max(seq), 0) INTO head FROM audit_events;
            SELECT coalesce(max(part_high), head + 1) INTO high FROM assent_audit_partition_bounds();
            SELECT greatest(100, head - coalesce((SELECT seq FROM audit_events
                WHERE seq IS NOT NULL AND at >= recent - 2592000000 ORDER BY at LIMIT 1), head)) INTO size;
            WHILE high <= head + size LOOP
                name := 'audit_events_from_' || high;
                EXECUTE format('CREATE TABLE %I (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
                EXECUTE format('WITH moved AS (DELETE FROM audit_events_pending WHERE seq >= %s AND seq < %s '
                    'RETURNING *) INSERT INTO %I SELECT * FROM moved', high, high + size, name);
                EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                    name, high, high + size);
                high := high + size;
                made := made + 1;
            END LOOP;
            IF prune_through IS NOT NULL THEN
                FOR part IN SELECT * FROM assent_audit_partition_bounds()
                    WHERE part_high IS NOT NULL ORDER BY part_high
                LOOP
                    EXIT WHEN part.part_high - 1 > prune_through;
                    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE at >= %s)', part.part_name, recent)
                        INTO STRICT busy;
                    EXIT WHEN busy;
                    bound := part.part_high;
                END LOOP;
                SELECT min(seq) INTO aligned FROM audit_checkpoints WHERE seq >= bound - 1 AND seq <= prune_through;
                IF aligned IS NOT NULL THEN
                    FOR part IN SELECT * FROM assent_audit_partition_bounds() WHERE part_high <= bound LOOP
                        EXECUTE format('DROP TABLE %I', part.part_name);
                        dropped := dropped + 1;
                    END LOOP;
                    DELETE FROM audit_events WHERE seq <= aligned;
                    GET DIAGNOSTICS deleted = ROW_COUNT;
                END IF;
            END IF;
        END
        $$
        """
}
