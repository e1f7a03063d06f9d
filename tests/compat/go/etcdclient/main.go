// etcdclient: Go's clientv3 and concurrency packages (etcd 3.4, Debian's
// golang-etcd-server-dev), unmodified, driven by tests/compat/test_go_clientv3.py
// against tenure's etcd API. Each subcommand prints one line per step so
// the test can follow it; the seed survey's election and lease snippets
// are written as it shows them.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/etcdserver/api/v3lock/v3lockpb"
	"go.etcd.io/etcd/mvcc/mvccpb"
)

func fail(format string, args ...interface{}) {
	fmt.Printf("error: "+format+"\n", args...)
	os.Exit(1)
}

func connect(endpoints string) *clientv3.Client {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(endpoints, ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fail("connect: %v", err)
	}
	return client
}

// campaign NAME VALUE TTL: campaigns, prints "leader VALUE REV", then
// resigns when a line "resign" comes on stdin (or leads until killed).
func campaign(client *clientv3.Client, args []string) {
	ttl, _ := strconv.Atoi(args[2])
	ctx := context.Background()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(ttl))
	if err != nil {
		fail("session: %v", err)
	}
	fmt.Printf("session %x\n", session.Lease())
	election := concurrency.NewElection(session, args[0])
	if err = election.Campaign(ctx, args[1]); err != nil {
		fail("campaign: %v", err)
	}
	fmt.Printf("leader %s %d\n", args[1], election.Rev())
	stdin := bufio.NewScanner(os.Stdin)
	for stdin.Scan() {
		switch stdin.Text() {
		case "proclaim":
			if err := election.Proclaim(ctx, args[1]+"-again"); err != nil {
				fail("proclaim: %v", err)
			}
			fmt.Printf("proclaimed %s-again\n", args[1])
		case "resign":
			if err := election.Resign(ctx); err != nil {
				fail("resign: %v", err)
			}
			fmt.Println("resigned")
			return
		}
	}
	<-session.Done()
}

// observe NAME: prints "observed VALUE" for each leader it sees.
func observe(client *clientv3.Client, args []string) {
	session, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		fail("session: %v", err)
	}
	election := concurrency.NewElection(session, args[0])
	for response := range election.Observe(context.Background()) {
		fmt.Printf("observed %s\n", response.Kvs[0].Value)
	}
	fail("observe ended")
}

// mutex NAME FILE TIMES: takes the lock TIMES times, appending "start PID
// REV" and "end PID REV" to FILE while holding it (REV: the lock key's
// create revision, the fencing token).
func mutex(client *clientv3.Client, args []string) {
	times, _ := strconv.Atoi(args[2])
	session, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		fail("session: %v", err)
	}
	defer session.Close()
	m := concurrency.NewMutex(session, args[0])
	for i := 0; i < times; i++ {
		if err := m.Lock(context.Background()); err != nil {
			fail("lock: %v", err)
		}
		f, err := os.OpenFile(args[1], os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			fail("open: %v", err)
		}
		fmt.Fprintf(f, "start %d %d\n", os.Getpid(), m.Header().Revision)
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(f, "end %d %d\n", os.Getpid(), m.Header().Revision)
		f.Close()
		if err := m.Unlock(context.Background()); err != nil {
			fail("unlock: %v", err)
		}
	}
	fmt.Println("done")
}

// lease KEY: the seed's lease calls: Grant 10 s, Put with the lease,
// KeepAlive, a follower's watch for the key's DELETE, Revoke.
func lease(client *clientv3.Client, args []string) {
	ctx := context.Background()
	key := args[0]
	resp, err := client.Grant(ctx, 10)
	if err != nil {
		fail("grant: %v", err)
	}
	fmt.Printf("granted %d\n", resp.TTL)
	if _, err = client.Put(ctx, key, "node-1", clientv3.WithLease(resp.ID)); err != nil {
		fail("put: %v", err)
	}
	keepAliveCh, err := client.KeepAlive(ctx, resp.ID)
	if err != nil {
		fail("keepalive: %v", err)
	}
	if ka := <-keepAliveCh; ka == nil || ka.TTL <= 0 {
		fail("keepalive answered %v", ka)
	}
	fmt.Println("renewed")
	got, err := client.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 || got.Kvs[0].Lease != int64(resp.ID) {
		fail("get: %v %v", err, got)
	}
	watch := client.Watch(ctx, key, clientv3.WithRev(got.Header.Revision+1))
	if _, err = client.Revoke(ctx, resp.ID); err != nil {
		fail("revoke: %v", err)
	}
	for wresp := range watch {
		for _, ev := range wresp.Events {
			if ev.Type == mvccpb.DELETE {
				fmt.Printf("deleted %s\n", ev.Kv.Key)
				return
			}
		}
	}
	fail("watch ended")
}

// grantKept grants a lease of ttl seconds and keeps it alive (or not).
func grantKept(client *clientv3.Client, ttl int64, keep bool) clientv3.LeaseID {
	resp, err := client.Grant(context.Background(), ttl)
	if err != nil {
		fail("grant: %v", err)
	}
	if keep {
		if _, err := client.KeepAlive(context.Background(), resp.ID); err != nil {
			fail("keepalive: %v", err)
		}
	}
	return resp.ID
}

// svc-campaign NAME VALUE KEEP: etcd's Election service (v3electionpb) with
// a 2 s lease, kept alive when KEEP is "keep": prints "leader VALUE REV",
// then resigns at a line "resign"; a campaign that fails prints
// "aborted: ERROR" (its lease ended while it waited).
func svcCampaign(client *clientv3.Client, args []string) {
	lease := grantKept(client, 2, args[2] == "keep")
	fmt.Printf("lease %x\n", lease)
	election := v3electionpb.NewElectionClient(client.ActiveConnection())
	resp, err := election.Campaign(context.Background(), &v3electionpb.CampaignRequest{
		Name: []byte(args[0]), Lease: int64(lease), Value: []byte(args[1])})
	if err != nil {
		fmt.Printf("aborted: %v\n", err)
		return
	}
	fmt.Printf("leader %s %d\n", args[1], resp.Leader.Rev)
	stdin := bufio.NewScanner(os.Stdin)
	for stdin.Scan() {
		if stdin.Text() == "resign" {
			if _, err := election.Resign(context.Background(),
				&v3electionpb.ResignRequest{Leader: resp.Leader}); err != nil {
				fail("resign: %v", err)
			}
			fmt.Println("resigned")
			return
		}
	}
}

// svc-observe NAME: the Election service's Observe stream.
func svcObserve(client *clientv3.Client, args []string) {
	election := v3electionpb.NewElectionClient(client.ActiveConnection())
	stream, err := election.Observe(context.Background(),
		&v3electionpb.LeaderRequest{Name: []byte(args[0])})
	if err != nil {
		fail("observe: %v", err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			fail("observe: %v", err)
		}
		fmt.Printf("observed %s\n", resp.Kv.Value)
	}
}

// svc-lock NAME FILE TIMES: etcd's Lock service (v3lockpb), appending
// "start PID REV" and "end PID REV" under the lock.
func svcLock(client *clientv3.Client, args []string) {
	times, _ := strconv.Atoi(args[2])
	lease := grantKept(client, 10, true)
	locks := v3lockpb.NewLockClient(client.ActiveConnection())
	for i := 0; i < times; i++ {
		resp, err := locks.Lock(context.Background(),
			&v3lockpb.LockRequest{Name: []byte(args[0]), Lease: int64(lease)})
		if err != nil {
			fail("lock: %v", err)
		}
		f, err := os.OpenFile(args[1], os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			fail("open: %v", err)
		}
		fmt.Fprintf(f, "start %d %d\n", os.Getpid(), resp.Header.Revision)
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(f, "end %d %d\n", os.Getpid(), resp.Header.Revision)
		f.Close()
		if _, err := locks.Unlock(context.Background(),
			&v3lockpb.UnlockRequest{Key: resp.Key}); err != nil {
			fail("unlock: %v", err)
		}
	}
	fmt.Println("done")
}

// stm PREFIX TIMES: concurrency.NewSTM at its default isolation
// (serializable snapshot: its reads are ranges inside a txn, and the first
// one's own header fixes the snapshot; a conflict retries with what the
// failed txn's Else branch read) moving 1 from PREFIXa to PREFIXb TIMES
// times; prints "done". stm-init PREFIX sets them to 100 and 0; stm-read
// PREFIX prints both.
func stm(client *clientv3.Client, args []string) {
	times, _ := strconv.Atoi(args[1])
	from, to := args[0]+"a", args[0]+"b"
	for i := 0; i < times; i++ {
		_, err := concurrency.NewSTM(client, func(s concurrency.STM) error {
			a, _ := strconv.Atoi(s.Get(from))
			b, _ := strconv.Atoi(s.Get(to))
			s.Put(from, strconv.Itoa(a-1))
			s.Put(to, strconv.Itoa(b+1))
			return nil
		})
		if err != nil {
			fail("stm: %v", err)
		}
	}
	fmt.Println("done")
}

func stmInit(client *clientv3.Client, args []string) {
	for key, value := range map[string]string{args[0] + "a": "100", args[0] + "b": "0"} {
		if _, err := client.Put(context.Background(), key, value); err != nil {
			fail("put: %v", err)
		}
	}
}

func stmRead(client *clientv3.Client, args []string) {
	resp, err := client.Get(context.Background(), args[0], clientv3.WithPrefix())
	if err != nil {
		fail("get: %v", err)
	}
	for _, kv := range resp.Kvs {
		fmt.Printf("%s %s\n", kv.Key, kv.Value)
	}
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: etcdclient ENDPOINTS campaign|observe|mutex|lease|svc-campaign|svc-observe|svc-lock|stm|stm-init|stm-read ARGS...")
	}
	client := connect(os.Args[1])
	defer client.Close()
	args := os.Args[3:]
	switch os.Args[2] {
	case "campaign":
		campaign(client, args)
	case "observe":
		observe(client, args)
	case "mutex":
		mutex(client, args)
	case "lease":
		lease(client, args)
	case "svc-campaign":
		svcCampaign(client, args)
	case "svc-observe":
		svcObserve(client, args)
	case "svc-lock":
		svcLock(client, args)
	case "stm":
		stm(client, args)
	case "stm-init":
		stmInit(client, args)
	case "stm-read":
		stmRead(client, args)
	default:
		fail("unknown command %s", os.Args[2])
	}
}
