package relay

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultCompression is the codec the relay compresses produce batches
// with unless told otherwise. It must be one every consumer reads without
// extra codecs: KafkaJS, the usual Node.js client, ships only gzip built
// in (snappy, lz4 and zstd need plugins), and gzip was chosen over none by
// measurement (docs/PERFORMANCE.md, "Relay compression").
const DefaultCompression = "gzip"

// Compressions are the codec names [CompressionOption] accepts.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// CompressionOption is the franz-go option that compresses the relay's
// produce batches with the named codec (one of [Compressions]). Appended
// after [ClientOptions] it replaces the default.
func CompressionOption(name string) (kgo.Opt, error) {
	var c kgo.CompressionCodec
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "none":
		c = kgo.NoCompression()
	case "gzip":
		c = kgo.GzipCompression()
	case "snappy":
		c = kgo.SnappyCompression()
	case "lz4":
		c = kgo.Lz4Compression()
	case "zstd":
		c = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("unknown compression %q: use one of %s", name, strings.Join(Compressions, ", "))
	}
	return kgo.ProducerBatchCompression(c), nil
}
