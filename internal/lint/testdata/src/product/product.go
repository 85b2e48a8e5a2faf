// Package product is product code: every rule applies.
package product

import (
	"fmt"
	"log"
	"log/slog"
	"time"
)

type clock struct{}

// Sleep is a method, not time.Sleep.
func (clock) Sleep(time.Duration) {}

func wait() {
	time.Sleep(time.Millisecond) // want `time.Sleep is not allowed here`
	f := time.Sleep              // want `time.Sleep is not allowed here`
	f(0)
	clock{}.Sleep(0)
	fmt.Println("x")      // want `fmt.Println is not allowed here`
	fmt.Printf("%d\n", 1) // want `fmt.Printf is not allowed here`
	fmt.Print("x")        // want `fmt.Print is not allowed here`
	_ = fmt.Sprintf("%d", 1)
	log.Printf("x")     // want `log.Printf is not allowed here`
	l := slog.Default() // want `slog.Default is not allowed here`
	l.Info("x")
	_ = slog.New(slog.DiscardHandler)
}
