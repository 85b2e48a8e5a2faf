package product

import (
	"fmt"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	time.Sleep(time.Millisecond)
	fmt.Println("a helper process writes to its stdout")
}
