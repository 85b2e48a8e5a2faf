// Package kgroup is what the projector and the consumer library share about
// their membership in a Kafka consumer group (the classic protocol, which
// both use): the session timeout, static membership (KIP-345) and leaving
// the group at once on a clean stop.
//
// A dynamic member that dies holds its partitions until its session times
// out, and its replacement joins as a new member, so the partitions stall
// for about the session timeout. A static member (group.instance.id) that
// dies and is replaced at once by a process with the same instance id takes
// its place without waiting: the stall is the replacement's start. So the
// deployments name each member after something a restart keeps (the pod's
// name in a StatefulSet, the container's id in compose).
//
// On a clean stop franz-go sends no LeaveGroup for a static member (it
// expects the same instance id back soon and spares the group a
// rebalance); its partitions would then stall until the session timed out
// when no replacement comes (a scale-down, a rollout that renames pods).
// [Close] leaves explicitly instead, so a clean stop moves the partitions
// at once, static or not.
package kgroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultSessionTimeout is the session timeout `runstream projector` and
// `runstream etl` use unless told otherwise: how long the group waits for
// a member that stopped heartbeating (a crash, a network partition, a
// process stuck) before giving its partitions to the others. franz-go's
// (and Kafka's since 3.0, KIP-735) default is 45 s, chosen for clients on
// flaky cloud networks; a stalled projector is visible lag on every run of
// its partitions (PROJECTOR_LAG_HIGH fires at 5 s), so we take Kafka's
// earlier default, 10 s: still three heartbeats (every 3 s) to miss before
// a member is dropped, and above brokers' minimum (group.min.session.timeout.ms,
// 6 s). With static membership a replaced member does not wait for it at
// all.
const DefaultSessionTimeout = 10 * time.Second

// leaveTimeout bounds the explicit leave of a clean stop: past it the
// member times out of the group by itself.
const leaveTimeout = 5 * time.Second

// Options returns the franz-go group options for a session timeout (0:
// franz-go's default) and an instance id (empty: dynamic membership).
func Options(sessionTimeout time.Duration, instanceID string) []kgo.Opt {
	var opts []kgo.Opt
	if sessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(sessionTimeout))
	}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	return opts
}

// ClientID returns the client id a member of group sends, so that lag
// reports (runstream lag, GET /v1/lag) tell members apart: the group and
// the instance id when there is one, else the host name and process id
// ("runstream-projector-host1-4242"). franz-go's default, "kgo", is the
// same for every member.
func ClientID(group, instanceID string) kgo.Opt {
	if instanceID != "" {
		return kgo.ClientID(group + "-" + instanceID)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return kgo.ClientID(fmt.Sprintf("%s-%s-%d", group, host, os.Getpid()))
}

// Close closes cl, a group consumer of group, after leaving the group. It
// is for a clean stop: the caller has stopped polling and allowed
// rebalances. A dynamic member leaves through franz-go's Close. A static
// member (instanceID set) is first taken out of franz-go's group
// management, which then sends no LeaveGroup, and then leaves with an
// explicit one naming its member id and instance id: a broker refuses it
// (FENCED_INSTANCE_ID) if a replacement with the same instance id has
// already taken the place, so it never removes its successor.
func Close(cl *kgo.Client, group, instanceID string, log *slog.Logger) {
	defer cl.Close()
	if instanceID == "" {
		return // franz-go's Close leaves
	}
	memberID, _ := cl.GroupMetadata()
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	// Stops heartbeats and revokes the assignment (running the revoke
	// callbacks); sends no LeaveGroup for a static member, except after a
	// cooperative revoke it has not rejoined from (then ours finds the
	// member gone, which is fine).
	if err := cl.LeaveGroupContext(ctx); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
		log.Warn("stopping group membership", "group", group, "instanceId", instanceID, "err", err)
	}
	if memberID == "" {
		return // never joined
	}
	if err := Leave(ctx, cl, group, memberID, instanceID); err != nil {
		log.Warn("leaving the consumer group failed; its partitions move when the session times out",
			"group", group, "instanceId", instanceID, "memberId", memberID, "err", err)
		return
	}
	log.Info("left the consumer group", "group", group, "instanceId", instanceID, "memberId", memberID)
}

// Leave sends a LeaveGroup for one member of group; instanceID may be
// empty for a dynamic member. A member already gone (UNKNOWN_MEMBER_ID) is
// not an error.
func Leave(ctx context.Context, cl *kgo.Client, group, memberID, instanceID string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberID // versions before 3, which have no Members
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	if instanceID != "" {
		m.InstanceID = kmsg.StringPtr(instanceID)
	}
	m.Reason = kmsg.StringPtr("clean shutdown")
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	errs := []error{ignoreGone(kerr.ErrorForCode(resp.ErrorCode))}
	for _, mr := range resp.Members {
		errs = append(errs, ignoreGone(kerr.ErrorForCode(mr.ErrorCode)))
	}
	return errors.Join(errs...)
}

func ignoreGone(err error) error {
	if errors.Is(err, kerr.UnknownMemberID) {
		return nil
	}
	return err
}
