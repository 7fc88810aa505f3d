package pushload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServerCPU returns the CPU time (user and system) a PostgreSQL server on
// this machine listening on port has used so far: its postmaster's, its
// running processes' and the exited ones' it has reaped (the postmaster's
// cutime and cstime). It tells where the time of a run went besides the
// client: a statement that costs the server more shows here.
func ServerCPU(port int) (time.Duration, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	flag := []byte("\x00-p\x00" + strconv.Itoa(port) + "\x00")
	postmaster := 0
	for _, p := range procs {
		cmd, err := os.ReadFile(p)
		if err == nil && bytes.Contains(cmd, flag) && bytes.Contains(cmd, []byte("postgres")) {
			postmaster, _ = strconv.Atoi(strings.Split(p, "/")[2])
			break
		}
	}
	if postmaster == 0 {
		return 0, fmt.Errorf("no PostgreSQL server with -p %d on this machine", port)
	}
	total := time.Duration(0)
	for _, p := range procs {
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		f, err := statFields(pid)
		if err != nil || (pid != postmaster && f[1] != strconv.Itoa(postmaster)) {
			continue // gone, or not the server's
		}
		n := 13 // utime, stime (fields 14, 15)
		if pid == postmaster {
			n = 15 // and the reaped children's (16, 17)
		}
		for _, s := range f[11:n] {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, err
			}
			total += time.Duration(v) * time.Second / clockTicks
		}
	}
	return total, nil
}

// statFields are /proc/PID/stat's fields from the third (state) on.
func statFields(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, errors.New("unreadable /proc/PID/stat")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 15 {
		return nil, errors.New("short /proc/PID/stat")
	}
	return f, nil
}
