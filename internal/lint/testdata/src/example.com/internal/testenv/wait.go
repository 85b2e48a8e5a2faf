// Package testenv is the tests' helpers: they may sleep, not print.
package testenv

import (
	"fmt"
	"time"
)

func Wait() {
	time.Sleep(time.Millisecond)
	fmt.Println("x") // want `fmt.Println is not allowed here`
}
