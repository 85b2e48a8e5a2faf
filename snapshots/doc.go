// Package snapshots owns the Redis layout of DESIGN.md section 2, the one
// format the projector writes and the API reads:
//
//   - keys: a run's snapshot [Key], a tenant's run index [IndexKey], the
//     deployment's updates channel ([UpdatesChannelOf]), the projectors'
//     [ResyncSetKey], and the
//     convergence cursor and lease ([ConvergeCursorKey],
//     [ConvergeLeaseKey]);
//   - the guarded write: one Lua script that sets a snapshot only when the
//     stored watermark allows it ([ModeCAS], [ModeMax], [ModeMaxEq]) and
//     publishes its [Notification] atomically with it; [WriteAll] sends
//     many in one pipeline with their run index entries;
//   - the JSON codec: [Append] encodes a snapshot byte for byte as
//     encoding/json does, [Decode] reads it in one pass (encoding/json
//     whenever the fast path is unsure);
//   - the head: [ParseHead] reads tenantId, lastEventSeq and stale of a
//     stored snapshot without decoding it, [ReadWatermarks] the watermark
//     and stale flag inside Redis, without sending the snapshot;
//   - the change notification: [Notification], its one encoder and its one
//     parser, which validates what anyone on the Redis server may publish;
//   - reads: [Load] (pipelined GETs, decoded) and [Getter] (the GETs of
//     concurrent requests batched into pipelines);
//   - repairs: [Rebuild] and [Resync] from the store's projection, and
//     [Reindex].
//
// The projector writes snapshots through it (its pipelining and cache stay
// in package projector); the HTTP API reads them through it.
package snapshots
