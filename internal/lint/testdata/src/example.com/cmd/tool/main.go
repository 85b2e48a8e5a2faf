// Command tool is a command: it may print, not sleep.
package main

import (
	"fmt"
	"log"
	"time"
)

func main() {
	fmt.Println("x")
	log.Fatal("x")
	time.Sleep(time.Millisecond) // want `time.Sleep is not allowed here`
}
