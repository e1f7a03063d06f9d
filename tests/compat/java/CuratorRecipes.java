// Apache Curator's recipes, unmodified, as one contender process that
// tests/compat/test_curator.py starts several of against `tenure server
// -zk-addr`. Each mode connects, prints "ready ID" and waits for a line on
// stdin ("go"), so the test lets every contender in at once; then:
//
//   mutex CONNECT PATH ID LOGFILE ROUNDS
//       InterProcessMutex: ROUNDS times acquire(), append "start PID" to
//       LOGFILE, sleep briefly, append "end PID", release(); then "done ID".
//   latch CONNECT PATH ID
//       LeaderLatch: "joined ID" once its node is there, "leader ID MILLIS"
//       from LeaderLatchListener.isLeader ("follower ID MILLIS" from
//       notLeader); at the end of stdin closes the latch ("closed ID
//       MILLIS") and exits.
//   selector CONNECT PATH ID LOGFILE
//       LeaderSelector, autoRequeue off: takeLeadership appends "start PID",
//       prints "leader ID", holds briefly, appends "end PID", prints
//       "released ID" and returns; then "done ID".
//
// MILLIS is System.currentTimeMillis() when the line is printed. Every line
// is flushed as it is printed. Any failure prints its stack trace and exits
// with status 1.

import java.io.BufferedReader;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorRecipes {
    static final long PID = ProcessHandle.current().pid();
    static final long HOLD_MS = 50;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void append(String logFile, String line) throws IOException {
        try (FileWriter out = new FileWriter(logFile, StandardCharsets.UTF_8, true)) {
            out.write(line + "\n");
        }
    }

    static CuratorFramework connect(String connect) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(4000)
                .connectionTimeoutMs(4000) // no more than the session's: Curator warns
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected to " + connect + " within 15 s");
        }
        return client;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CuratorRecipes mutex|latch|selector CONNECT PATH ID ...");
            System.exit(2);
        }
        String mode = args[0];
        String path = args[2];
        String id = args[3];
        BufferedReader stdin = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            CuratorFramework client = connect(args[1]);
            say("ready " + id);
            if (stdin.readLine() == null) {
                throw new IllegalStateException("stdin closed before go");
            }
            switch (mode) {
                case "mutex":
                    mutex(client, path, args[4], Integer.parseInt(args[5]));
                    say("done " + id);
                    break;
                case "latch":
                    latch(client, path, id, stdin);
                    break;
                case "selector":
                    selector(client, path, id, args[4]);
                    say("done " + id);
                    break;
                case "cache":
                    cache(client, path, id, stdin);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
            client.close();
        } catch (Throwable error) {
            error.printStackTrace();
            System.out.flush();
            System.exit(1);
        }
        // Curator's and ZooKeeper's threads would keep a JVM up.
        System.exit(0);
    }

    static void mutex(CuratorFramework client, String path, String logFile, int rounds)
            throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        for (int i = 0; i < rounds; i++) {
            mutex.acquire();
            try {
                append(logFile, "start " + PID);
                Thread.sleep(HOLD_MS);
                append(logFile, "end " + PID);
            } finally {
                mutex.release();
            }
        }
    }

    static void latch(CuratorFramework client, String path, String id, BufferedReader stdin)
            throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                say("leader " + id + " " + System.currentTimeMillis());
            }

            @Override
            public void notLeader() {
                say("follower " + id + " " + System.currentTimeMillis());
            }
        });
        latch.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (latch.getOurPath() == null) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no latch node within 15 s");
            }
            Thread.sleep(10);
        }
        say("joined " + id + " " + latch.getOurPath());
        while (stdin.readLine() != null) {
            // Stay in the election until stdin closes.
        }
        latch.close();
        say("closed " + id + " " + System.currentTimeMillis());
    }

    static void selector(CuratorFramework client, String path, String id, String logFile)
            throws Exception {
        CountDownLatch led = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path,
                new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework leader) throws Exception {
                        try {
                            append(logFile, "start " + PID);
                            say("leader " + id);
                            Thread.sleep(4 * HOLD_MS);
                            append(logFile, "end " + PID);
                            say("released " + id);
                        } finally {
                            led.countDown();
                        }
                    }
                });
        selector.setId(id);
        selector.start();
        if (!led.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no leadership within 60 s");
        }
        // close() interrupts the selector's thread, which releases the
        // mutex after takeLeadership returns: wait until our node is gone.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (selector.getParticipants().stream().anyMatch(p -> p.getId().equals(id))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("still a participant 15 s after leading");
            }
            Thread.sleep(10);
        }
        selector.close();
    }

    static String text(ChildData data) {
        byte[] bytes = data == null ? null : data.getData();
        return bytes == null ? "" : new String(bytes, StandardCharsets.UTF_8);
    }

    static void cache(CuratorFramework client, String path, String id, BufferedReader stdin)
            throws Exception {
        CuratorCache cache = CuratorCache.build(client, path);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forAll((type, before, after) -> {
                    ChildData node = after != null ? after : before;
                    say("event " + type + " " + node.getPath() + " " + text(node));
                })
                .forInitialized(() -> say("initialized " + id))
                .build());
        cache.start();
        while (stdin.readLine() != null) {
            // Keep watching until stdin closes.
        }
        cache.close();
        say("closed " + id);
    }
}
