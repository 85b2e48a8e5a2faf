package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// processLog is the logger of the command this process runs, once
// newLogger built it: what the process says on its own (go-redis, the
// standard log package, the error it exits with) goes through it too, so
// every line of a command is in its --log-format.
var processLog atomic.Pointer[slog.Logger]

// useProcessLogger makes log the process's logger for everything that
// logs by itself rather than through a logger it was given:
//
//   - go-redis, which otherwise prints its connection errors ("redis:
//     connection pool: failed to dial ...") as plain text on stderr:
//     through redisLogger, at WARN with component=redis;
//   - the standard log package (net/http's server errors of the ops
//     endpoints, anything a dependency prints with log.Printf) and
//     slog.Default: slog.SetDefault routes both through log's handler;
//   - the error the process exits with (main).
//
// pgx and franz-go log nothing unless given a logger (franz-go gets one,
// kafkaLogOpt). These are process-wide settings: a process runs one
// command, which sets them once, when it builds its logger (tests that run
// several commands in one process get the last one's).
func useProcessLogger(log *slog.Logger) {
	processLog.Store(log)
	slog.SetDefault(log)
	redis.SetLogger(redisLogger{log.With("component", "redis")})
}

// Until a command builds its logger (and for commands that build none,
// like rebuild), go-redis's lines go to stderr as slog text, through
// redisLogger so that redisQuiet holds them back too.
func init() {
	redis.SetLogger(redisLogger{slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "redis")})
}

// redisQuiet, while above zero, drops go-redis's lines: openRedis sets it
// around its first PING, whose failure is the error the command stops with
// (printed once); go-redis would print the same failed dial once per retry
// before it.
var redisQuiet atomic.Int32

// redisLogger is go-redis's Logging interface on slog. go-redis only
// reports trouble through it (failed dials, broken connections, sentinel
// and cluster changes) and has no levels of its own there: WARN.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if redisQuiet.Load() > 0 {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	l.log.Log(ctx, slog.LevelWarn, strings.TrimPrefix(msg, "redis: "))
}
