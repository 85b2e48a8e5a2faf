package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming replica of p named name
// (pg_basebackup -R from p, its application_name set to name so that
// synchronous_standby_names can name it) on a loopback port of its own,
// starts it, and waits until it accepts (read-only) connections. It is
// asynchronous until p.SetSynchronousStandbys names it. The server is
// killed and its directory removed when the test ends.
func (p *PostgresProcess) StartStandby(name string) *PostgresProcess {
	t := p.t
	t.Helper()
	if _, err := os.Stat(filepath.Join(p.bin, "pg_basebackup")); err != nil {
		Missing(t, "PostgreSQL 15's pg_basebackup in "+p.bin)
	}
	s := &PostgresProcess{t: t, bin: p.bin, uid: p.uid, gid: p.gid}
	dir, err := os.MkdirTemp("", "runstream-pg-standby-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.data, s.logPath = dir, filepath.Join(dir, "data"), filepath.Join(dir, "postgres.log")
	t.Cleanup(func() {
		s.Kill()
		_ = os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if s.uid >= 0 {
		if err := os.Chown(dir, s.uid, s.gid); err != nil {
			t.Fatal(err)
		}
	}
	s.Port = freePort(t)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=runstream application_name=%s", p.Port, name)
	backup := exec.Command(filepath.Join(p.bin, "pg_basebackup"), "-d", conninfo, "-D", s.data,
		"-X", "stream", "-R", "--no-sync", "--checkpoint=fast")
	backup.SysProcAttr = s.sysProcAttr()
	if out, err := backup.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup of the primary on port %d: %v\n%s", p.Port, err, out)
	}
	// The copy holds the primary's settings; a later line wins.
	conf := []string{
		"",
		"# runstream testenv.StartStandby",
		fmt.Sprintf("port = %d", s.Port),
		fmt.Sprintf("unix_socket_directories = '%s'", dir),
		"hot_standby = on",
		fmt.Sprintf("primary_conninfo = '%s'", conninfo),
		"",
	}
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.auto.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(strings.Join(conf, "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	return s
}

// SetSynchronousStandbys sets synchronous_standby_names on the primary
// and reloads it; with names given, it waits (up to a minute) until one
// of them streams as a synchronous standby. Empty names make every
// standby asynchronous again.
func (p *PostgresProcess) SetSynchronousStandbys(names ...string) {
	p.t.Helper()
	list := strings.Join(names, ", ")
	p.exec(fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", strings.ReplaceAll(list, "'", "''")))
	p.exec("SELECT pg_reload_conf()")
	if len(names) == 0 {
		return
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		p.queryRow("SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')", &n)
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no standby of %q became synchronous within a minute:\n%s", list, Tail(p.logPath, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Promote turns a standby into a primary (pg_promote, waiting until it
// accepts writes).
func (p *PostgresProcess) Promote() {
	p.t.Helper()
	var ok bool
	p.queryRow("SELECT pg_promote(true, 60)", &ok)
	if !ok {
		p.t.Fatalf("the standby on port %d was not promoted within 60s:\n%s", p.Port, Tail(p.logPath, 20))
	}
}

func (p *PostgresProcess) exec(sql string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		p.t.Fatalf("connecting to postgres on port %d: %v", p.Port, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		p.t.Fatalf("%s on port %d: %v", sql, p.Port, err)
	}
}

func (p *PostgresProcess) queryRow(sql string, dst ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		p.t.Fatalf("connecting to postgres on port %d: %v", p.Port, err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql).Scan(dst...); err != nil {
		p.t.Fatalf("%s on port %d: %v", sql, p.Port, err)
	}
}

// AllowHosts lets clients from cidr in (trust, like loopback) and
// reloads the server: for components in network namespaces, which reach
// it at ServiceIP (listen_addresses must include it).
func (p *PostgresProcess) AllowHosts(cidr string) {
	p.t.Helper()
	f, err := os.OpenFile(filepath.Join(p.data, "pg_hba.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\n# runstream testenv.AllowHosts\nhost all all %s trust\nhost replication all %s trust\n", cidr, cidr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.exec("SELECT pg_reload_conf()")
}
