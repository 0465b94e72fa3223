package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one line of the stdio transport; a longer line is
// answered with a parse error and skipped.
const MaxLineBytes = 16 << 20

// LineTransport is the MCP stdio transport: newline-delimited JSON-RPC
// messages on Reader, replies on Writer. Unlike the SDK's own transport it
// never ends on a bad line: a line that is not JSON is answered with a
// JSON-RPC parse error (-32700), one that is JSON but not a valid message
// (another "jsonrpc" than "2.0", an id that is neither a string nor an
// integer, a batch, a method that is not a string) with an invalid
// request error (-32600), and the next line is read. Only well-formed
// messages reach the SDK. Its answers and the SDK's are written through
// one lock, a whole line at a time, so replies never interleave; and when
// the input ends, the connection reports the end only once every request
// passed on has been answered, so no reply is lost to the client closing
// its side first.
type LineTransport struct {
	// Reader is the stream of requests.
	Reader io.Reader
	// Writer receives the replies; it is never closed.
	Writer io.Writer
	// MaxLine bounds a line (0 means MaxLineBytes).
	MaxLine int
}

// Connect starts reading lines and returns the connection.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = MaxLineBytes
	}
	c := &lineConn{w: t.Writer, max: max, lines: make(chan rawLine), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}, idle: make(chan struct{})}
	go c.readLines(bufio.NewReaderSize(t.Reader, 64<<10), max)
	return c, nil
}

// rawLine is one line read, or the error that ended reading.
type rawLine struct {
	data    []byte
	tooLong bool
	err     error
}

// lineConn is a LineTransport's connection.
type lineConn struct {
	writeMu sync.Mutex
	w       io.Writer
	max     int
	lines   chan rawLine
	closed  chan struct{}
	once    sync.Once

	mu sync.Mutex
	// pending holds the ids of the requests passed on and not yet
	// answered.
	pending map[jsonrpc.ID]bool
	// idle is closed and replaced when pending becomes empty.
	idle chan struct{}
	// broken is set when a write failed: no reply can be written any more.
	broken bool
}

// readLines reads lines of at most max bytes (the newline and a carriage
// return before it left out) and hands them to Read until the input ends
// or the connection is closed.
func (c *lineConn) readLines(r *bufio.Reader, max int) {
	for {
		l := readLine(r, max)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads one line of at most max bytes; a longer one is read to
// its end and reported as too long, without keeping it.
func readLine(r *bufio.Reader, max int) rawLine {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return rawLine{data: bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), tooLong: tooLong}
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(buf) > 0 || tooLong:
			// A last line without a newline; the error comes next time.
			return rawLine{data: bytes.TrimSuffix(buf, []byte("\r")), tooLong: tooLong}
		default:
			return rawLine{err: err}
		}
	}
}

// Read returns the next well-formed message, answering every malformed
// line on the way. At the end of the input it waits until every request
// passed on has been answered (or the connection is closed), then returns
// io.EOF.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l rawLine
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, c.drain(ctx, l.err)
		}
		msg, reply := c.decode(l)
		if reply != nil {
			if err := c.writeLine(reply); err != nil {
				return nil, err
			}
			continue
		}
		if msg != nil {
			return msg, nil
		}
	}
}

// drain waits until no request passed on is unanswered, then returns the
// error that ended the input (io.EOF for its end).
func (c *lineConn) drain(ctx context.Context, err error) error {
	for {
		c.mu.Lock()
		done, idle := len(c.pending) == 0 || c.broken, c.idle
		c.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return err
		}
	}
}

// decode classifies a line: nothing for a blank line, a message to pass
// on, or the error reply to write for a malformed one.
func (c *lineConn) decode(l rawLine) (jsonrpc.Message, []byte) {
	if l.tooLong {
		return nil, errorReply(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: line longer than %d bytes", c.max))
	}
	data := bytes.TrimSpace(l.data)
	if len(data) == 0 {
		return nil, nil
	}
	if !json.Valid(data) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		what := "not an object"
		if data[0] == '[' {
			what = "a batch, which this server does not take: send one message a line"
		}
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: the message is "+what)
	}
	id, idOK := parseID(fields["id"])
	if reason := invalidReason(fields, idOK); reason != "" {
		return nil, errorReply(idOrNull(id, idOK), jsonrpc.CodeInvalidRequest, "invalid request: "+reason)
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, errorReply(idOrNull(id, idOK), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if reply := c.track(req); reply != nil {
			return nil, reply
		}
	}
	return msg, nil
}

// invalidReason says why a JSON object is not a JSON-RPC 2.0 message, or
// "" when it is one.
func invalidReason(fields map[string]json.RawMessage, idOK bool) string {
	var version string
	if err := json.Unmarshal(fields["jsonrpc"], &version); err != nil || version != "2.0" {
		return `"jsonrpc" must be "2.0"`
	}
	if _, ok := fields["id"]; ok && !idOK {
		return `"id" must be a string or an integer`
	}
	method, isRequest := fields["method"]
	if isRequest {
		var m string
		if err := json.Unmarshal(method, &m); err != nil {
			return `"method" must be a string`
		}
		if p, ok := fields["params"]; ok && !bytes.HasPrefix(p, []byte("{")) && !bytes.HasPrefix(p, []byte("[")) && string(p) != "null" {
			return `"params" must be an object or an array`
		}
		return ""
	}
	_, result := fields["result"]
	e, failure := fields["error"]
	if !idOK || result == failure {
		return `a message without "method" must be a response: an "id" and either "result" or "error"`
	}
	if failure && !bytes.HasPrefix(e, []byte("{")) {
		return `"error" must be an object`
	}
	return ""
}

// track records a call passed on as pending; a call whose id is already
// pending is answered here instead (JSON-RPC ids must be unique among the
// calls in flight).
func (c *lineConn) track(req *jsonrpc.Request) []byte {
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			c.forgetCancelled(req.Params)
		}
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[req.ID] {
		return errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: id %v is already in use by a request in flight", req.ID.Raw()))
	}
	c.pending[req.ID] = true
	return nil
}

// forgetCancelled stops waiting for the reply to a request the client
// cancelled: the server may answer it or not.
func (c *lineConn) forgetCancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.answered(id)
}

// answered removes id from the pending requests.
func (c *lineConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending[id] {
		return
	}
	delete(c.pending, id)
	if len(c.pending) == 0 {
		close(c.idle)
		c.idle = make(chan struct{})
	}
}

// Write writes msg as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a json-rpc message: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp.ID)
	}
	return err
}

// writeLine writes data and a newline in one write, under the write lock.
func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.w.Write(append(data, '\n')); err != nil {
		c.mu.Lock()
		c.broken = true
		close(c.idle)
		c.idle = make(chan struct{})
		c.mu.Unlock()
		return fmt.Errorf("writing a json-rpc message: %w", err)
	}
	return nil
}

// Close ends the connection: Read returns io.EOF. The reader is left to
// end with its input.
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: a stdio connection has no session id.
func (c *lineConn) SessionID() string { return "" }

// parseID reads a JSON-RPC id: a string or an integer. ok is false for
// anything else, an absent or null id included.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if raw == nil {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	switch v := v.(type) {
	case string:
		id, err := jsonrpc.MakeID(v)
		return id, err == nil
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 || bytes.ContainsAny(raw, ".eE") {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(v)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

// idOrNull is the id to answer with: the request's when it could be read,
// else null.
func idOrNull(id jsonrpc.ID, ok bool) any {
	if !ok {
		return nil
	}
	return id.Raw()
}

// errorReply is the line of a JSON-RPC error response.
func errorReply(id any, code int, message string) []byte {
	// A string, an integer and nil always marshal.
	idJSON, _ := json.Marshal(id)
	msgJSON, _ := json.Marshal(message)
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, idJSON, code, msgJSON))
}
