package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveLines starts `git agentmine serve args…` in repo and returns the
// login address (its first line) and the lines of its standard error up to
// and including the one that contains until ("" reads none).
func serveLines(t *testing.T, repo, until string, args ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"agentmine", "serve"}, args...)...)
	cmd.Dir = repo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &server{cmd: cmd}
	t.Cleanup(srv.kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address: %v", err)
	}
	var lines []string
	if until != "" {
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), until) {
				break
			}
		}
	}
	go io.Copy(io.Discard, errs)
	return strings.TrimSpace(line), lines
}

// TestServeRemoteAddresses: a board on every interface prints a login
// address other machines can reach (not localhost, when the machine has
// another address), lists every address it listens on, says its traffic
// is plain HTTP, and logs in at the address it printed.
func TestServeRemoteAddresses(t *testing.T) {
	repo := testRepo(t)
	login, lines := serveLines(t, repo, "plain HTTP", "--addr", "0.0.0.0:0", "--allow-remote")
	all := strings.Join(lines, "\n")
	u, err := url.Parse(login)
	if err != nil || u.Scheme != "http" {
		t.Fatalf("login address %q", login)
	}
	var other bool
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				other = true
			}
		}
	}
	if other && (u.Hostname() == "localhost" || net.ParseIP(u.Hostname()).IsLoopback()) {
		t.Errorf("login address %q names this machine's loopback, which no other machine reaches", login)
	}
	if !strings.Contains(all, "listening on http://"+u.Host+"/") || !strings.Contains(all, "127.0.0.1:"+u.Port()) {
		t.Errorf("the addresses listened on are not listed:\n%s", all)
	}
	if !strings.Contains(all, "warning: the board's traffic is plain HTTP") {
		t.Errorf("no word that the traffic is plain HTTP:\n%s", all)
	}
	jar, _ := cookiejar.New(nil)
	res, err := (&http.Client{Jar: jar}).Get(login)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("logging in at %s: %d", login, res.StatusCode)
	}
}

// TestServeTLS: with a certificate and its key the board serves HTTPS
// (login address https://, the login cookie Secure, no plain-HTTP warning)
// and refuses plain HTTP; a certificate without its key, or a file that
// is not one, is a usage error before anything listens.
func TestServeTLS(t *testing.T) {
	repo := testRepo(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	login, lines := serveLines(t, repo, "serving the board", "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(login, "https://127.0.0.1:") {
		t.Fatalf("login address %q, want https://127.0.0.1:…", login)
	}
	if strings.Contains(strings.Join(lines, "\n"), "plain HTTP") {
		t.Errorf("a TLS board warns of plain HTTP: %q", lines)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Set-Cookie"), "; Secure") {
		t.Errorf("HTTPS login: %d, cookie %q (want 303 and a Secure cookie)", res.StatusCode, res.Header.Get("Set-Cookie"))
	}
	plain := "http://" + strings.TrimPrefix(login, "https://")
	if res, err := http.Get(plain); err == nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP was served: %s", body)
		}
	}
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not a certificate\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certFile}, "error: --tls-cert and --tls-key go together"},
		{[]string{"--tls-key", keyFile}, "error: --tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", bad, "--tls-key", keyFile}, "error: reading the TLS certificate"},
	} {
		cmd := exec.Command("git", append([]string{"agentmine", "serve", "--addr", "127.0.0.1:0"}, c.args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), c.want) || !strings.Contains(string(out), "hint: ") {
			t.Errorf("serve %v: %v\n%s", c.args, err, out)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "board"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
