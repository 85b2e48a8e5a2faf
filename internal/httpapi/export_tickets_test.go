package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// SignTicket makes what only an API with tokens could write: a ticket for
// the grant (holder, route "run" or "tenant", target), signed with the key
// those tokens give, and the Redis key and value that make it
// redeemable. Tests use it to check what redemption refuses even in a
// correctly signed ticket.
func SignTicket(tokens map[string]string, holder, route, target string) (ticket, key string, value []byte) {
	ti := newTicketIssuer(tokens)
	value, _ = json.Marshal(ticketGrant{Holder: holder, Route: route, Target: target})
	b := make([]byte, ticketIDLen, ticketIDLen+sha256.Size)
	_, _ = rand.Read(b)
	b = append(b, ti.mac(b, value)...)
	ticket = base64.RawURLEncoding.EncodeToString(b)
	return ticket, ticketKey(ticket), value
}
