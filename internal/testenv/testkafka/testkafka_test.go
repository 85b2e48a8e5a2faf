package testkafka

import "testing"

// TestMurmur2_KnownJavaValues checks Murmur2 against Kafka's own vectors
// (UtilsTest.testMurmur2).
func TestMurmur2_KnownJavaValues(t *testing.T) {
	for key, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
	} {
		if got := Murmur2([]byte(key)); got != want {
			t.Errorf("Murmur2(%q) = %d, want %d (Kafka UtilsTest)", key, got, want)
		}
	}
}
