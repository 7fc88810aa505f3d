package main

import (
	"os"
	"testing"
)

// asCLIEnv makes the test binary run main() instead of the tests, so a test can start
// the CLI as a real process (and send it real signals) without building it again.
const asCLIEnv = "EVENTPIPE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}
