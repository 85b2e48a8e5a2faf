package store

// Default public names (README.md, "Configuration"), for every component that
// takes them as configuration (flags, Config fields left empty). They are
// here, in the contract's leaf package, because the topic is part of the
// Kafka record's contract and the group is the default RUNSTREAM_GROUP every
// command reports lag for, and because every component that needs them
// (relay, projector, consumer library, ETL, API, commands) already imports
// store.
const (
	// DefaultTopic is the Kafka topic of run events (RUNSTREAM_TOPIC).
	DefaultTopic = "run-events"
	// DefaultProjectorGroup is the projectors' consumer group
	// (RUNSTREAM_GROUP), and the group lag is reported for by default.
	DefaultProjectorGroup = "runstream-projector"
	// DefaultETLGroup is the analytics ETL's consumer group, its own so it
	// reads every partition beside the projectors; lag is exported for it
	// by default too.
	DefaultETLGroup = "runstream-etl"
)
