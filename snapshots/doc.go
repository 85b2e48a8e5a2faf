// Package snapshots owns the Redis layout (docs/INTERFACES.md, "Redis"),
// the one format the projector writes and the API reads:
//
//   - keys: a run's snapshot [Key], a tenant's run index [IndexKey], the
//     deployment's updates channel ([UpdatesChannelOf]), the projectors'
//     [ResyncSetKey], the convergence cursor and lease
//     ([ConvergeCursorKey], [ConvergeLeaseKey]), and the tenants with runs
//     due to expire ([ExpiringTenantsKey]);
//   - the guarded write: one Lua script that sets a snapshot only when the
//     stored watermark allows it ([ModeCAS], [ModeMax], [ModeMaxEq]) and
//     publishes its [Notification] atomically with it; [WriteAll] sends
//     many in one pipeline with their run index entries;
//   - the JSON codec: [Append] encodes a snapshot byte for byte as
//     encoding/json does, [Decode] reads it in one pass (encoding/json
//     whenever the fast path is unsure);
//   - the encodings ([Encoding], --snapshot-encoding): JSON, or gzip
//     behind a head line (compress.go); every reader takes both
//     ([IsCompressed], [JSON], [Gzipped] for a client that accepts gzip),
//     so writers can switch while running;
//   - the runs catalog (catalog.go): per tenant, the sorted sets and hash
//     the runs list searches, sorts and counts by, kept by the same
//     script as every snapshot write ([QueryCatalog], [CatalogCounts],
//     [CatalogEntries], [Catalog] to file runs missing from it,
//     [DeleteCatalog]);
//   - retention ([Policy], --snapshot-ttl, [DefaultTTL]): a terminal run's
//     snapshot and catalog entries expire at its terminal event plus the
//     TTL ([ExpireAt]); [SweepExpired] drops expired runs from the catalogs of
//     tenants that write nothing, and [Resync] of an expired run answers
//     [ErrExpired];
//   - the head: [ParseHead] reads tenantId, lastEventSeq and stale of a
//     stored snapshot without decoding it, [ReadWatermarks] the watermark
//     and stale flag inside Redis, without sending the snapshot;
//   - the change notification: [Notification], its one encoder and its one
//     parser, which validates what anyone on the Redis server may publish;
//   - reads: [Load] (pipelined GETs, decoded) and [Getter] (the GETs of
//     concurrent requests batched into pipelines);
//   - repairs: [Rebuild], [RebuildRuns] and [Resync] from the store's
//     projection, and [Reindex].
//
// The projector writes snapshots through it (its pipelining and cache stay
// in package projector); the HTTP API reads them through it.
package snapshots
