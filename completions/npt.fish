# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_npt_global_optspecs
    string join \n h/help V/version
end

function __fish_npt_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_npt_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_npt_using_subcommand
    set -l cmd (__fish_npt_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c npt -n "__fish_npt_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c npt -n "__fish_npt_needs_command" -s V -l version -d 'Print version'
complete -c npt -n "__fish_npt_needs_command" -f -a "serve" -d 'Responder for every npt test: TCP and UDP echo on one port number'
complete -c npt -n "__fish_npt_needs_command" -f -a "probe" -d 'Line quality: UDP or TCP echo with sequence numbers and timestamps'
complete -c npt -n "__fish_npt_needs_command" -f -a "demo" -d 'Starts an embedded server on loopback, probes it over UDP and TCP, prints the report'
complete -c npt -n "__fish_npt_needs_command" -f -a "run" -d 'Simulated users: web over TCP, QUIC browsing, downloads/uploads, game-like UDP'
complete -c npt -n "__fish_npt_needs_command" -f -a "http" -d 'Gateway benchmark: HTTP/1.1 keep-alive or new connection per request, HTTP/2, virtual hosts, closed or open loop, cold start of a command'
complete -c npt -n "__fish_npt_needs_command" -f -a "ping" -d 'Hop RTT: TCP connect (or connect + one echo end to end, --echo), UDP echo (npt serve or any echo) or QUIC handshake, ping-style'
complete -c npt -n "__fish_npt_needs_command" -f -a "bulk" -d 'Capacity through npt serve on its one port: TCP or QUIC streams up, down or both (with the kernel\'s retransmits and RTT per stream), or UDP at a rate (delivered, loss, jitter)'
complete -c npt -n "__fish_npt_needs_command" -f -a "trace" -d 'A relay chain\'s waterfall: each segment\'s RTT measured from its upstream hop (via hop agents), their sum, the chain\'s own RTT, and the relays\' cost'
complete -c npt -n "__fish_npt_needs_command" -f -a "lifetime" -d 'How long a NAT or relay keeps an idle UDP flow (or TCP connection) alive, and whether an expired flow comes back from a new source port (npt serve at the far end calls each flow back)'
complete -c npt -n "__fish_npt_needs_command" -f -a "mtu" -d 'The largest datagram that crosses each way, whether PMTUD works (an ICMP came back) or larger ones vanish (a black hole, bracketed), and where the path fragments'
complete -c npt -n "__fish_npt_needs_command" -f -a "setup" -d 'Each layer\'s setup cost (TCP, SOCKS5 or HTTP CONNECT, TLS, QUIC 0-RTT, the first byte) in ms and in round trips, flagged where it took more than its protocol needs'
complete -c npt -n "__fish_npt_needs_command" -f -a "merge" -d 'Joins the results of the parts of a segmented run (--segment i/n) into one, exactly'
complete -c npt -n "__fish_npt_needs_command" -f -a "compare" -d 'Results side by side against theoretical latency (the forwarding-scenario table)'
complete -c npt -n "__fish_npt_needs_command" -f -a "report" -d 'Renders a saved result again: text, JSON, CSV, Markdown or HTML with charts; or a range of a monitor\'s history as one result (--from)'
complete -c npt -n "__fish_npt_needs_command" -f -a "monitor" -d 'Watches every path on a schedule: history kept exactly in SQLite, a dashboard, alerts, OpenMetrics for Prometheus'
complete -c npt -n "__fish_npt_needs_command" -f -a "lab" -d 'Several hosts on this box: network namespaces joined by emulated links (delay, jitter, loss, rate), services on them, scenarios across them (root)'
complete -c npt -n "__fish_npt_needs_command" -f -a "completions" -d 'Prints a shell completion script (bash, zsh, fish, elvish, powershell) to stdout'
complete -c npt -n "__fish_npt_needs_command" -f -a "man" -d 'Prints a manual page (roff), or writes them all with --out-dir'
complete -c npt -n "__fish_npt_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c npt -n "__fish_npt_using_subcommand serve" -s l -l listen -d 'Address for TCP and UDP, on the same port number (repeatable)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l token -d 'Only answer clients that prove this secret (probe/ping/run --token): a keyed handshake on TCP and UDP, then a MAC on every packet. Disables raw echo' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l source-pps -d 'UDP packets per second from one source socket that has not authenticated (each address may use 4 times this) [default: 200; 4000000 with --open-limits]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l source-mbps -d 'UDP megabits per second from one such source socket [default: 4; 10000 with --open-limits]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l total-pps -d 'UDP packets per second from all unauthenticated sources together [default: 10000; none with --open-limits]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l total-mbps -d 'UDP megabits per second from all unauthenticated sources together [default: 40; none with --open-limits]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l max-conns -d 'TCP connections served at once, and as many HTTP ones with --http; further ones are closed at once and counted [default: what the open-file limit holds, at most 65536]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l idle-timeout -d 'Close a TCP connection with no new frame for this long' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l io-timeout -d 'Close a connection stalled inside a frame (header, payload) or not reading its replies for this long (TCP and QUIC streams; HTTP bodies and responses); also the most a QUIC handshake may take' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l http-header-timeout -d 'Close an HTTP connection whose request head is not complete this long after its first byte' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l http-idle-timeout -d 'Close an HTTP connection with no traffic and no request in progress for this long' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l reply-mbps -d 'Asked-for reply bytes (TCP/QUIC Responses, HTTP /bytes/N) per second per source address, in megabits; one reply can be at most one second\'s worth [default: 100; 10000 with --open-limits]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l log-every -d 'How often refusals are summarized on stderr (tests shorten it)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l http -d 'Also serve HTTP on this address: `/`, `/bytes/N`, `/delay/MS`, `/status/CODE`, POST echo; HTTP/1.1 + h2c (or h2 and http/1.1 by ALPN with --tls)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l http-delay -d 'HOST=DUR: answer every HTTP request for this virtual host (Host or :authority, port aside) DUR late — backends of known, different delay behind one port, for `npt http --host` per-host load (repeatable, at most 64, each at most 600s)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l cert -d 'PEM certificate chain for --tls' -r -F
complete -c npt -n "__fish_npt_using_subcommand serve" -l key -d 'PEM private key for --tls' -r -F
complete -c npt -n "__fish_npt_using_subcommand serve" -l quic -d 'Also serve QUIC on this UDP address (framed requests on every bidirectional stream, ALPN `npt`; for `npt run --quic`)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l quic-cert -d 'PEM certificate chain for --quic [default: self-signed for localhost, 127.0.0.1, ::1]' -r -F
complete -c npt -n "__fish_npt_using_subcommand serve" -l quic-key -d 'PEM private key for --quic-cert' -r -F
complete -c npt -n "__fish_npt_using_subcommand serve" -l quic-0rtt -d '0-RTT on --quic: `off` (tickets allow no early data), `accept` (a resumed client\'s 0-RTT request is answered at once; replayable, like all early data) or `reject` (tickets promise early data, then every session is forgotten, as a restarted server does: each 0-RTT attempt is rejected — a broken 0-RTT for `npt setup --resume`)' -r -f -a "off\t''
accept\t''
reject\t''"
complete -c npt -n "__fish_npt_using_subcommand serve" -l quic-cert-out -d 'Write the QUIC certificate (PEM) to this file, for `npt run --ca FILE`' -r -F
complete -c npt -n "__fish_npt_using_subcommand serve" -l stamp -d 'Also be a STAMP Session-Reflector (RFC 8762) on this UDP address (IANA\'s port is 862), for `npt probe stamp://` and any STAMP or TWAMP-Light sender; stateful unless --stamp-stateless, under the same limits as UDP' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l stamp-key -d 'STAMP authenticated mode: answer only test packets whose HMAC verifies under this key (hex, at least 32 digits), and seal the answers with it' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l metrics -d 'Serve the responder\'s counters in OpenMetrics text at http://ADDR/metrics (Prometheus)' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l hop-allow -d 'Targets the hop agent may measure, comma-separated (repeatable): addresses (10.0.3.2), networks (10.0.0.0/8), ADDR:PORT, or HOST:PORT by name [default: nothing]' -r
complete -c npt -n "__fish_npt_using_subcommand serve" -l open-limits -d 'Lift the internet-safe defaults: 4,000,000 pps and 10,000 Mbit/s per UDP source, no total, 10,000 Mbit/s reply budget, raw UDP echo for everyone'
complete -c npt -n "__fish_npt_using_subcommand serve" -l raw-echo -d 'Answer raw (unframed) UDP from any address [default: loopback and private addresses only; it reflects anything]'
complete -c npt -n "__fish_npt_using_subcommand serve" -l limit-local -d 'Apply the limits to loopback and private source addresses too (they are exempt by default: benches, labs and clusters run there). For a host whose private side is not trusted, or whose network lets spoofed private sources in'
complete -c npt -n "__fish_npt_using_subcommand serve" -l tls -d 'HTTPS on the --http address (self-signed certificate unless --cert/--key)'
complete -c npt -n "__fish_npt_using_subcommand serve" -l http1-only -d 'Serve HTTP/1.1 only on --http: no h2c, and ALPN offers http/1.1 alone with --tls — a backend without HTTP/2, for `npt http --http2-fallback`'
complete -c npt -n "__fish_npt_using_subcommand serve" -l stamp-stateless -d 'The STAMP reflector copies each sender\'s sequence number instead of keeping its own count per session (senders then see round-trip loss only, not which way)'
complete -c npt -n "__fish_npt_using_subcommand serve" -l hop-agent -d 'Be a hop agent: measure RTTs on request (`npt ping --from`) — TCP connect, UDP echo or QUIC handshake — or the path MTU each way (`npt trace --mtu`) to a target within --hop-allow, for clients that pass --token (needed)'
complete -c npt -n "__fish_npt_using_subcommand serve" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand probe" -l config -d 'The line tester\'s XML config (ConfigTemplate.xml); flags given here override it' -r -F
complete -c npt -n "__fish_npt_using_subcommand probe" -l mode -d 'Pacing mode [default: rate]' -r -f -a "interval\t'Send, then wait --interval after each packet (closed loop, like ping)'
rate\t'Fixed --pps, open loop; latency also from the intended send time'
relay\t'Warm up --warmup packets, then send one per reply (the line tester\'s onrecv)'"
complete -c npt -n "__fish_npt_using_subcommand probe" -l pps -d 'Packets per second, whole run (rate mode) [default: 100]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l interval -d 'Wait after each send (interval mode) [default: 10ms]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l warmup -d 'Packets in flight after warm-up, whole run (relay mode) [default: 128]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l warmup-interval -d 'Spacing of warm-up packets (relay mode) [default: 1ms]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -s n -l count -d 'Stop after sending this many packets' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -s d -l duration -d 'Stop sending after this long (e.g. 60s, 2m). Neither this nor --count: until Ctrl-C' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l clients -d 'Client sockets (distinct source ports); the load is split evenly [default: 1]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l threads -d 'Sender threads the clients are spread over [default: min(clients, cores)]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -s s -l size -d 'Bytes per packet, npt\'s header included [default: 64; stamp://: 44, or 112 with --stamp-key]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l fill -d 'Payload fill' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l stamp-key -d 'stamp:// in STAMP\'s authenticated mode: the reflector\'s HMAC key (hex, at least 32 digits)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l loss-timeout -d 'A packet unanswered this long is lost; a later reply is "late"' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l report-every -d 'Print a stage line every this long [default: 1s]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l report-every-packets -d 'Print a stage line every this many packets sent (instead of by time)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l behind-threshold -d 'Sends more than this late count as behind schedule' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l rx-stamp -d 'UDP: where a reply\'s receive time comes from [default: user]' -r -f -a "user\t'The clock read after the receive returned, wake-up included: the RTT at the application (what user-space ping-pong tools such as sockperf report)'
kernel\t'The kernel\'s timestamp of the reply\'s arrival: the tester\'s own wake-up is not in the RTT'"
complete -c npt -n "__fish_npt_using_subcommand probe" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand probe" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand probe" -l packets -d 'Log every packet to FILE as its fate is decided, one JSON object a line (NDJSON: flow, seq, send time, RTT or lost/late/duplicate/refused, the direction where the far end\'s counts tell), or `-` for stdout (text then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand probe" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l reply-dscp -d 'UDP: ask npt serve to send its replies with this DSCP (0-63 or a name, as --dscp) [default: the DSCP sent]. npt serve also says what each request arrived with' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l reply-ecn -d 'UDP: ask npt serve to send its replies with this ECN codepoint: ect0, ect1 or not-ect [default: the one sent]. Never CE' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l under-load -d 'Run bulk streams to this tcp://HOST:PORT or quic://HOST:PORT, or UDP at --load-rate to udp://HOST:PORT (`npt serve`; may be the probe\'s own target) in a loaded phase between an idle and a recovery phase, and report the RTT of each phase, the increase under load and the responsiveness (RPM)' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-streams -d 'Load streams each way, 1 to 1024 [default: 4]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-direction -d 'Which way the load goes: down (the server sends), up or both [default: down; a udp:// load: up, or down (npt serve sends UDP down only to --token sessions and loopback)]' -r -f -a "up\t''
down\t''
both\t''"
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-rate -d 'The load\'s rate, bits/s with a unit (e.g. 20mbit): a udp:// load\'s (required for it; datagrams, IP and UDP headers not counted), or the pace of each stream of a tcp:// or quic:// load (payload, as iperf3\'s -b: --load-streams 4 --load-rate 5mbit moves up to 20 Mbit/s each way) [default for streams: as fast as the path goes]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-size -d 'udp:// load: datagram size in bytes, IP and UDP headers not counted [default: 1200]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-duration -d 'Length of the loaded phase [default: 10s]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-idle -d 'Length of the idle phase before the load [default: 5s]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-recovery -d 'Length of the recovery phase after the load [default: 5s]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-congestion -d 'tcp:// load: this host\'s TCP congestion control for the load\'s streams (e.g. cubic, bbr; one the kernel offers) [default: the system\'s]. It paces what this host sends (`--load-direction up`); a download is paced by the server\'s' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-ca -d 'quic:// load: trust the certificates in this PEM file' -r -F
complete -c npt -n "__fish_npt_using_subcommand probe" -l segment -d 'Run part I of N of the load (0-based, e.g. 3/8): users, rates and counts are split so the N parts add up to the whole; `npt merge` joins the parts\' results' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l start-at -d 'Wait until this wall-clock time (RFC 3339, e.g. 2026-12-01T10:00:00Z) before starting, so the parts of a segmented run begin together' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l run-id -d 'Name shared by the parts of one run [default: derived from the workload and --start-at]' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l metrics -d 'Serve live counters and latency histograms in OpenMetrics text at http://ADDR/metrics (for Prometheus), e.g. 0.0.0.0:9464' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l metrics-linger -d 'Keep --metrics up this long after the run (a second Ctrl-C ends it), so a scraper collects the final values' -r
complete -c npt -n "__fish_npt_using_subcommand probe" -l ping-pong -d 'One message in flight over one connection, the next sent when its echo is back (the TCP ping-pong client of quic-tun\'s latency test): short for --mode relay --warmup 1'
complete -c npt -n "__fish_npt_using_subcommand probe" -l verify -d 'Check that every echoed payload is what was sent'
complete -c npt -n "__fish_npt_using_subcommand probe" -l raw -d 'Carry sequence and timestamp inside the payload, for any plain echo server (round trips only: no loss or delay per direction)'
complete -c npt -n "__fish_npt_using_subcommand probe" -l owd -d 'The two hosts\' clocks are synchronized (NTP, PTP): report one-way delay up and down. Without it one-way delay is reported only where the clocks are one (a loopback target, or inside npt lab); delay variation per direction needs no sync'
complete -c npt -n "__fish_npt_using_subcommand probe" -l spin -d 'UDP: wait by spinning instead of sleeping, so sends leave within about a microsecond of their due time and replies are read as they arrive; costs one busy CPU per probe thread'
complete -c npt -n "__fish_npt_using_subcommand probe" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand probe" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand probe" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand probe" -l load-insecure -d 'quic:// load: accept any certificate'
complete -c npt -n "__fish_npt_using_subcommand probe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c npt -n "__fish_npt_using_subcommand demo" -s d -l duration -d 'How long the UDP probe runs' -r
complete -c npt -n "__fish_npt_using_subcommand demo" -l pps -d 'UDP packets per second' -r
complete -c npt -n "__fish_npt_using_subcommand demo" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand run" -l quic -d 'The QUIC responder (`npt serve --quic`), HOST:PORT' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l quic-name -d 'Name checked against the QUIC certificate [default: the host of --quic]' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l ca -d 'QUIC: trust the certificates in this PEM file (e.g. from `npt serve --quic-cert-out`)' -r -F
complete -c npt -n "__fish_npt_using_subcommand run" -s u -l users -d 'Simulated users (closed model); with --arrival-rate, the most active at once' -r
complete -c npt -n "__fish_npt_using_subcommand run" -s d -l duration -d 'How long the run lasts (e.g. 3m)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l ramp-up -d 'Users start evenly spread over this time' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l arrival-rate -d 'Open model: new user sessions per second (e.g. 50 or 50/s), each one visit' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l mix -d 'Activity weights [default: web=95,quic=5 with --quic, else web=100]' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l think -d 'Think time between sessions, MIN..MAX (log-uniform)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l seed -d 'Random seed for every choice (same seed, same users) [default: from the clock]' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l timeout -d 'Connect, handshake and read/write idle timeout' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l interval -d 'Length of one interval of the series and of the progress line' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l pages -d 'Web: pages per visit' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l rounds -d 'Web: request rounds per page (after the handshake exchange)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l handshake-up -d 'Web: handshake exchange, bytes up' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l handshake-down -d 'Web: handshake exchange, bytes down' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l request-up -d 'Web: request size' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l request-down -d 'Web: response size' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l pause -d 'Web: pause between requests and pages' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l resources -d 'QUIC: resources fetched concurrently after the main document' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l doc-down -d 'QUIC: main document size' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l resource-down -d 'QUIC: resource size' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l download -d 'Download size (at most 64MB)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l upload -d 'Upload size (at most 64MB)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l chunk -d 'Transfer chunk size' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l game-length -d 'Game: session length' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l tick -d 'Game: packets per second (fixed per session)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l game-size -d 'Game: bytes per packet, header included' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l loss-timeout -d 'Game: a packet unanswered this long is lost' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l workers -d 'Threads the users run on, each an event loop with its share of them [default: half the CPUs when a target is on this machine, leaving the rest to it; else one per CPU]' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand run" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand run" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l segment -d 'Run part I of N of the load (0-based, e.g. 3/8): users, rates and counts are split so the N parts add up to the whole; `npt merge` joins the parts\' results' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l start-at -d 'Wait until this wall-clock time (RFC 3339, e.g. 2026-12-01T10:00:00Z) before starting, so the parts of a segmented run begin together' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l run-id -d 'Name shared by the parts of one run [default: derived from the workload and --start-at]' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l metrics -d 'Serve live counters and latency histograms in OpenMetrics text at http://ADDR/metrics (for Prometheus), e.g. 0.0.0.0:9464' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l metrics-linger -d 'Keep --metrics up this long after the run (a second Ctrl-C ends it), so a scraper collects the final values' -r
complete -c npt -n "__fish_npt_using_subcommand run" -l insecure -d 'QUIC: accept any certificate'
complete -c npt -n "__fish_npt_using_subcommand run" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand run" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand run" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand run" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand http" -s c -l connections -d 'Concurrent connections (each carries --streams requests with --http2) [default: 50]; with per-host rates (--host NAME=R/s), each host\'s own' -r
complete -c npt -n "__fish_npt_using_subcommand http" -s d -l duration -d 'How long to send for: 10s, 2m …' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l rate -d 'Open loop: this many requests per second in total, released on time by a precise pacer thread (sleep, then spin); latency is measured from the intended send time (coordinated-omission correction, as wrk2) with the figure from the actual send beside' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l streams -d 'Concurrent streams per HTTP/2 connection (needs --http2)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l host -d 'Virtual host sent as Host / :authority; repeat for several. Plain HOST: the hosts share the -c connections round-robin (every host gets the same request rate). HOST=N: N connections of its own (closed loop); HOST=R/s: R requests/s of its own on -c connections (open loop) — each host loaded as by a separate client, its rate and latency its own' -r
complete -c npt -n "__fish_npt_using_subcommand http" -s H -l header -d 'Extra request header, "Name: value"; repeatable' -r
complete -c npt -n "__fish_npt_using_subcommand http" -s m -l method -d 'Request method (default GET, or POST when a body is given)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l body -d 'Request body' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l body-file -d 'Request body read from a file' -r -F
complete -c npt -n "__fish_npt_using_subcommand http" -l timeout -d 'Per-request limit (connect + TLS + whole response); slower requests count as timeouts' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l cold-start -d 'Spawn this command (sh -c, own process group), poll until its first 2xx answer, report the time to it, then run the warm benchmark; the group is killed at the end' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l cold-start-port -d 'With --cold-start through a gateway: the started command\'s own port ([HOST:]PORT, HOST the URL\'s by default). The cold start is then also split at the command\'s first 2xx on that port, asked directly (plain HTTP/1.1): the service\'s part and the gateway\'s' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l ready-timeout -d 'How long --cold-start waits for the first 2xx answer' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l threads -d 'Client runtime threads. Default: one per CPU when the target is remote (a dedicated load machine); half the CPUs (at least 1) when it is on this machine (loopback or a local address), leaving the rest to the server — except with --new-conn, whose connection setup costs the client as much as the server (one per CPU). The output and the result\'s config say which was chosen and why (`threads`, `threads_why`)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand http" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand http" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l segment -d 'Run part I of N of the load (0-based, e.g. 3/8): users, rates and counts are split so the N parts add up to the whole; `npt merge` joins the parts\' results' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l start-at -d 'Wait until this wall-clock time (RFC 3339, e.g. 2026-12-01T10:00:00Z) before starting, so the parts of a segmented run begin together' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l run-id -d 'Name shared by the parts of one run [default: derived from the workload and --start-at]' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l metrics -d 'Serve live counters and latency histograms in OpenMetrics text at http://ADDR/metrics (for Prometheus), e.g. 0.0.0.0:9464' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l metrics-linger -d 'Keep --metrics up this long after the run (a second Ctrl-C ends it), so a scraper collects the final values' -r
complete -c npt -n "__fish_npt_using_subcommand http" -l new-conn -d 'A new TCP (and TLS) connection for every request, sent with `Connection: close`'
complete -c npt -n "__fish_npt_using_subcommand http" -l http2 -d 'HTTP/2: h2 by ALPN over https (h2 and http/1.1 offered), h2c with prior knowledge over http. Asked once before the run: a server without HTTP/2 fails the run in one line (exit 1)'
complete -c npt -n "__fish_npt_using_subcommand http" -l http2-fallback -d 'HTTP/2 when the server speaks it, else HTTP/1.1 (--streams then 1): the result\'s summary.protocol says which ran, summary.downgrade why it fell back'
complete -c npt -n "__fish_npt_using_subcommand http" -s k -l insecure -d 'Accept any TLS certificate (self-signed test servers)'
complete -c npt -n "__fish_npt_using_subcommand http" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand http" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand http" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand http" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand ping" -s c -l count -d 'Attempts to make; 0 = until Ctrl-C' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -s i -l interval -d 'Time between attempts (e.g. 200ms, 1s)' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -s W -l timeout -d 'How long one attempt waits for its answer' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -s s -l size -d 'UDP datagram size in bytes, header included (at least 48 framed, 24 raw); with --echo, the TCP echo\'s size; icmp://, the ICMP message\'s (its 8-byte header included, at least 28)' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l ca -d 'QUIC: trust the certificates in this PEM file (e.g. from `npt serve --quic-cert-out`)' -r -F
complete -c npt -n "__fish_npt_using_subcommand ping" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand ping" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand ping" -l packets -d 'Log every attempt to FILE as it is settled, one JSON object a line (NDJSON: seq, send time, RTT or lost/late/refused/error), or `-` for stdout (text then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand ping" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l from -d 'Measure from a hop agent instead of from here: `npt serve --token S --hop-agent` on npt://HOST:PORT pings the target and sends the samples back (needs --token, the agent\'s secret). For the segments between relays that this host cannot see' -r
complete -c npt -n "__fish_npt_using_subcommand ping" -l echo -d 'tcp:// end to end: each attempt is a new connection and one framed echo on it against `npt serve`, connect and echo timed apart. A connect alone is answered by the first relay or forwarder, which accepts by itself even when nothing behind it answers'
complete -c npt -n "__fish_npt_using_subcommand ping" -l setup -d 'With --echo: a second echo on each connection, after the one the ping times, as the base round trip of a setup block — each layer (TCP connect, the --via proxy\'s greeting and CONNECT, the first echo) in ms and in round trips, judged as `npt setup` judges'
complete -c npt -n "__fish_npt_using_subcommand ping" -l raw -d 'UDP: ping any echo server (the stamp rides in the payload) instead of `npt serve`'
complete -c npt -n "__fish_npt_using_subcommand ping" -l insecure -d 'QUIC: accept any certificate'
complete -c npt -n "__fish_npt_using_subcommand ping" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand ping" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand ping" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand ping" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand bulk" -s P -l streams -d 'Streams each way (TCP connections or QUIC streams), 1 to 1024' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l direction -d 'down (the server sends), up (this host sends) or both; UDP: up or down (down needs --token, or a server on loopback)' -r -f -a "up\t''
down\t''
both\t''"
complete -c npt -n "__fish_npt_using_subcommand bulk" -s d -s t -l duration -d 'How long to measure (e.g. 10s, 1m)' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -s i -l interval -d 'Length of one interval line and record' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -s b -l rate -d 'The rate, bits/s with a unit (e.g. 50mbit, 1.5gbit, 800kbit): UDP\'s to send at (required); on tcp:// and quic:// each stream\'s pace, payload bits/s, as iperf3\'s -b (-P 4 --rate 5mbit moves up to 20 Mbit/s each way; a download is paced by npt serve) [default for streams: as fast as the path goes]' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -s s -l size -d 'UDP: datagram size in bytes, npt header included (88 to 65507)' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l timeout -d 'Connect, handshake and the first answer must each come within this' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l ca -d 'QUIC: trust the certificates in this PEM file (e.g. from `npt serve --quic-cert-out`)' -r -F
complete -c npt -n "__fish_npt_using_subcommand bulk" -s C -l congestion -d 'tcp://: this host\'s TCP congestion control on the streams it sends (e.g. cubic, bbr; one the kernel offers), as iperf3\'s -C; the result reports what the kernel ran [default: the system\'s]. Not with --direction down: the server\'s governs a download' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l threads -d 'Worker threads moving the streams, 1 to 64 [default: 1 for tcp://; quic://: 2, or fewer CPUs or streams]' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand bulk" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand bulk" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l segment -d 'Run part I of N of the load (0-based, e.g. 3/8): users, rates and counts are split so the N parts add up to the whole; `npt merge` joins the parts\' results' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l start-at -d 'Wait until this wall-clock time (RFC 3339, e.g. 2026-12-01T10:00:00Z) before starting, so the parts of a segmented run begin together' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l run-id -d 'Name shared by the parts of one run [default: derived from the workload and --start-at]' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l metrics -d 'Serve live counters and latency histograms in OpenMetrics text at http://ADDR/metrics (for Prometheus), e.g. 0.0.0.0:9464' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l metrics-linger -d 'Keep --metrics up this long after the run (a second Ctrl-C ends it), so a scraper collects the final values' -r
complete -c npt -n "__fish_npt_using_subcommand bulk" -l insecure -d 'QUIC: accept any certificate'
complete -c npt -n "__fish_npt_using_subcommand bulk" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand bulk" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand bulk" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand bulk" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand trace" -l hop -d 'A relay on the path, in order: `npt serve --token S --hop-agent` on it measures the next segment. `=HOST:PORT`: where the previous hop reaches it, when that is not the address this host uses (another link, QUIC\'s own port)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l through -d 'The chain\'s entry: the RTT through every relay to the target, measured from here (TCP: an echo on an open connection, to the target\'s `npt serve`)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -s c -l count -d 'Attempts per segment (and through the chain) in each round' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -s i -l interval -d 'Time between attempts (e.g. 200ms, 1s)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -s W -l timeout -d 'How long one attempt waits for its answer' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -s s -l size -d 'UDP datagram size in bytes, header included (at least 48)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l ca -d 'QUIC: trust the certificates in this PEM file (e.g. from `npt serve --quic-cert-out`)' -r -F
complete -c npt -n "__fish_npt_using_subcommand trace" -l during -d 'Measure a round first, then run CMD (`sh -c`) and measure rounds until it exits: the segments\' drift while, e.g., `npt compare` loads the chain' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l mtu-timeout -d '`--mtu`: the longest one segment\'s search may take (at most 30 s, a hop agent\'s bound); what it knows by then is reported. A monitor\'s trace target with `--mtu` needs an `every` longer than this' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand trace" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand trace" -l bind -d 'Send from this source address (one of this host\'s), bound before connecting or sending' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l dscp -d 'Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7); the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l ecn -d 'Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default), with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l tos -d 'Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP and ECN), e.g. --tos 0xb8 (EF)' -r
complete -c npt -n "__fish_npt_using_subcommand trace" -l insecure -d 'QUIC: accept any certificate'
complete -c npt -n "__fish_npt_using_subcommand trace" -l mtu -d 'After the first round, search each segment\'s path MTU each way (`npt mtu`\'s DF-set probes to the segment\'s `npt serve` over UDP): this host the first segment, each hop agent the next'
complete -c npt -n "__fish_npt_using_subcommand trace" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand trace" -s 4 -l ipv4 -d 'IPv4 only: names resolve to IPv4 addresses, sockets are IPv4'
complete -c npt -n "__fish_npt_using_subcommand trace" -s 6 -l ipv6 -d 'IPv6 only: names resolve to IPv6 addresses, sockets are IPv6'
complete -c npt -n "__fish_npt_using_subcommand trace" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l max -d 'The longest idle gap tried (at most 600 s, the responder\'s longest): a path that keeps a flow this long reads "longer than --max". The search takes about twice the lifetime' -r
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l resolution -d 'How narrow the bracket gets (default: 1 s, or 2 % of the lifetime when that is more)' -r
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand lifetime" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand lifetime" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand lifetime" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand mtu" -l max -d 'The largest datagram tried, bytes of UDP payload (default: a 1500-byte IP packet\'s, 1472 over IPv4, 1452 over IPv6; an interface of this host with a smaller MTU refuses larger ones at once, which is read as its limit)' -r
complete -c npt -n "__fish_npt_using_subcommand mtu" -l timeout -d 'The longest the search may take; what it knows by then is reported' -r
complete -c npt -n "__fish_npt_using_subcommand mtu" -l token -d 'The secret `npt serve --token` was started with: a keyed handshake, then every packet carries a MAC (the secret never travels). A hop agent\'s (`--from`, trace) is its own' -r
complete -c npt -n "__fish_npt_using_subcommand mtu" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand mtu" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand mtu" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand mtu" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand mtu" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand mtu" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand setup" -l via -d 'Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE), socks5h://… (the proxy resolves the target\'s name), http://HOST:PORT (HTTP CONNECT)' -r
complete -c npt -n "__fish_npt_using_subcommand setup" -l via-user -d 'Proxy credentials USER:PASS, instead of putting them in the --via URL' -r
complete -c npt -n "__fish_npt_using_subcommand setup" -l tls -d 'The TLS version of https:// (1.2: two round trips, 1.3: one)' -r -f -a "1.2\t''
1.3\t''"
complete -c npt -n "__fish_npt_using_subcommand setup" -s c -l count -d 'Fresh connections to measure' -r
complete -c npt -n "__fish_npt_using_subcommand setup" -l timeout -d 'The most one connection\'s setup may take' -r
complete -c npt -n "__fish_npt_using_subcommand setup" -l server-name -d 'The name sent in TLS (SNI) and the Host header [default: the URL\'s host]' -r
complete -c npt -n "__fish_npt_using_subcommand setup" -l json -d 'Write the result document (JSON) to FILE, atomically (checked before anything is sent), or `-` for stdout (the text report then goes to stderr)' -r -F
complete -c npt -n "__fish_npt_using_subcommand setup" -l format -d 'What goes to stdout: a text report, or the JSON result document (then no text at all)' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand setup" -l resume -d 'Resume the session from a ticket (one uncounted connection fetches it first); over QUIC also send the request in 0-RTT, and say whether the server accepted it'
complete -c npt -n "__fish_npt_using_subcommand setup" -s q -l quiet -d 'Quiet: no banner and no progress, stage or per-attempt lines; only the report'
complete -c npt -n "__fish_npt_using_subcommand setup" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand merge" -l json -d 'Write the merged document here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand merge" -l format -d 'What goes to stdout' -r -f -a "text\t''
json\t''"
complete -c npt -n "__fish_npt_using_subcommand merge" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand compare" -l baseline -d 'The row the others are compared with (a name or a file given above); overrides the scenario file\'s `baseline`' -r
complete -c npt -n "__fish_npt_using_subcommand compare" -l theoretical -d 'Result files: theoretical latency of a row, in ms: NAME=253' -r
complete -c npt -n "__fish_npt_using_subcommand compare" -l hops -d 'Result files: theoretical latency as the sum of the hops\' RTTs, in ms: NAME=152+32+69' -r
complete -c npt -n "__fish_npt_using_subcommand compare" -l runs -d 'Scenario file: run the whole set this many times, interleaved (A B C A B C …)' -r
complete -c npt -n "__fish_npt_using_subcommand compare" -l out-dir -d 'Scenario file: where the result files and logs go [default: a new temporary directory, kept and printed]' -r -F
complete -c npt -n "__fish_npt_using_subcommand compare" -l json -d 'Also write the table as JSON here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand compare" -l markdown -d 'Also write the table as Markdown here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand compare" -l html -d 'Also write a self-contained HTML page with the table and charts here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand compare" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand report" -l from -d 'A monitor\'s store (`npt monitor`\'s SQLite file): report a range of one target\'s history. Again for more stores (other vantages, older files): their rounds of the target merged exactly into one result, each store\'s own figures beside it' -r -F
complete -c npt -n "__fish_npt_using_subcommand report" -l target -d 'With --from: the target\'s name' -r
complete -c npt -n "__fish_npt_using_subcommand report" -l since -d 'With --from: the range\'s start, as a time before its end (24h, 90m, 7d) or an RFC 3339 time [default: 24h]' -r
complete -c npt -n "__fish_npt_using_subcommand report" -l until -d 'With --from: the range\'s end, as a time before now or an RFC 3339 time [default: now]' -r
complete -c npt -n "__fish_npt_using_subcommand report" -l format -r -f -a "text\t''
json\t''
csv\t''
md\t''
html\t''"
complete -c npt -n "__fish_npt_using_subcommand report" -s o -l output -d 'Write here (atomically) instead of stdout' -r -F
complete -c npt -n "__fish_npt_using_subcommand report" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand monitor" -l target -d 'A target to watch, without a config file: tcp:// or udp:// (ping), quic:// or http(s):// URL (repeat for several)' -r
complete -c npt -n "__fish_npt_using_subcommand monitor" -l every -d 'Without a config file: one round of each target every DUR [default: 10s]' -r
complete -c npt -n "__fish_npt_using_subcommand monitor" -l store -d 'The SQLite store [default: the config\'s `store`, or npt-monitor.db]' -r -F
complete -c npt -n "__fish_npt_using_subcommand monitor" -l listen -d 'Serve the dashboard and /metrics on ADDR (e.g. 127.0.0.1:9600)' -r
complete -c npt -n "__fish_npt_using_subcommand monitor" -l token -d 'The token clients of a non-loopback --listen must send' -r
complete -c npt -n "__fish_npt_using_subcommand monitor" -l vantage -d 'This monitor\'s name in the store, the page and every metric [default: the host name]' -r
complete -c npt -n "__fish_npt_using_subcommand monitor" -l check -d 'Check the config and print each target\'s round, then exit'
complete -c npt -n "__fish_npt_using_subcommand monitor" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "check" -d 'Checks a topology file and prints the plan (addresses, routes, services); no root needed'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "up" -d 'Builds the lab and leaves it running in the background'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "down" -d 'Stops a lab started with `up` and removes everything it created'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "status" -d 'Nodes, links (what each direction applies now and applied so far), services and the changes made by `set` of a running lab'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "set" -d 'Changes a running link\'s impairments: `npt lab set demo client-server delay=80ms loss=2%`. KEY is a topology file key (delay, jitter, loss, loss.model, loss.p, loss.r, loss.bad, loss.good, duplicate, reorder, rate, queue) for both directions, or a_to_b.KEY / b_to_a.KEY for one; KEY=none removes a setting. LINK is its two nodes (A-B, either order) or its number in the file (from 0)'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "exec" -d 'Runs a command on a node of a running lab (`npt` is this npt binary)'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "run" -d 'Builds the lab, runs its scenarios, prints the compare table, tears it down'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "daemon" -d 'The background process behind `up` (not for direct use)'
complete -c npt -n "__fish_npt_using_subcommand lab; and not __fish_seen_subcommand_from check up down status set exec run daemon help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from up" -l seed -d 'Seed of the links\' random loss, jitter, duplication and reordering' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from up" -l link-threads -d 'Threads moving packets (the link directions are spread over them). One thread serves light traffic on any number of links and spins at most one core; give 2 for more than ~50,000 packets/s' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from up" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from down" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from status" -l since -d 'Only what happened since an earlier `status --json` reading saved in FILE: its counters and histograms subtracted (one run\'s drops and delay error)' -r -F
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from status" -l json -d 'The status as JSON instead of text'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from set" -l json -d 'The changes made, as JSON'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from set" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from exec" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l seed -d 'Seed of the links\' random loss, jitter, duplication and reordering' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l link-threads -d 'Threads moving packets, as for `npt lab up`' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l runs -d 'Scenario file: run the whole set this many times, interleaved (A B C A B C …)' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l out-dir -d 'Scenario file: where the result files and logs go [default: a new temporary directory, kept and printed]' -r -F
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l json -d 'Also write the table as JSON here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l markdown -d 'Also write the table as Markdown here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -l html -d 'Also write a self-contained HTML page with the table and charts here (atomically)' -r -F
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from daemon" -l seed -d 'Seed of the links\' random loss, jitter, duplication and reordering' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from daemon" -l link-threads -d 'Threads moving packets (the link directions are spread over them). One thread serves light traffic on any number of links and spins at most one core; give 2 for more than ~50,000 packets/s' -r
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from daemon" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "check" -d 'Checks a topology file and prints the plan (addresses, routes, services); no root needed'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "up" -d 'Builds the lab and leaves it running in the background'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "down" -d 'Stops a lab started with `up` and removes everything it created'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "status" -d 'Nodes, links (what each direction applies now and applied so far), services and the changes made by `set` of a running lab'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "set" -d 'Changes a running link\'s impairments: `npt lab set demo client-server delay=80ms loss=2%`. KEY is a topology file key (delay, jitter, loss, loss.model, loss.p, loss.r, loss.bad, loss.good, duplicate, reorder, rate, queue) for both directions, or a_to_b.KEY / b_to_a.KEY for one; KEY=none removes a setting. LINK is its two nodes (A-B, either order) or its number in the file (from 0)'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "exec" -d 'Runs a command on a node of a running lab (`npt` is this npt binary)'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "run" -d 'Builds the lab, runs its scenarios, prints the compare table, tears it down'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "daemon" -d 'The background process behind `up` (not for direct use)'
complete -c npt -n "__fish_npt_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c npt -n "__fish_npt_using_subcommand completions" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand man" -l out-dir -d 'Write every page (npt.1, npt-probe.1, npt-lab-run.1 …) into DIR instead' -r -F
complete -c npt -n "__fish_npt_using_subcommand man" -l list -d 'List the pages: file name, a tab, then the subcommand\'s words'
complete -c npt -n "__fish_npt_using_subcommand man" -s h -l help -d 'Print help'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "serve" -d 'Responder for every npt test: TCP and UDP echo on one port number'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "probe" -d 'Line quality: UDP or TCP echo with sequence numbers and timestamps'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "demo" -d 'Starts an embedded server on loopback, probes it over UDP and TCP, prints the report'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "run" -d 'Simulated users: web over TCP, QUIC browsing, downloads/uploads, game-like UDP'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "http" -d 'Gateway benchmark: HTTP/1.1 keep-alive or new connection per request, HTTP/2, virtual hosts, closed or open loop, cold start of a command'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "ping" -d 'Hop RTT: TCP connect (or connect + one echo end to end, --echo), UDP echo (npt serve or any echo) or QUIC handshake, ping-style'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "bulk" -d 'Capacity through npt serve on its one port: TCP or QUIC streams up, down or both (with the kernel\'s retransmits and RTT per stream), or UDP at a rate (delivered, loss, jitter)'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "trace" -d 'A relay chain\'s waterfall: each segment\'s RTT measured from its upstream hop (via hop agents), their sum, the chain\'s own RTT, and the relays\' cost'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "lifetime" -d 'How long a NAT or relay keeps an idle UDP flow (or TCP connection) alive, and whether an expired flow comes back from a new source port (npt serve at the far end calls each flow back)'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "mtu" -d 'The largest datagram that crosses each way, whether PMTUD works (an ICMP came back) or larger ones vanish (a black hole, bracketed), and where the path fragments'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "setup" -d 'Each layer\'s setup cost (TCP, SOCKS5 or HTTP CONNECT, TLS, QUIC 0-RTT, the first byte) in ms and in round trips, flagged where it took more than its protocol needs'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "merge" -d 'Joins the results of the parts of a segmented run (--segment i/n) into one, exactly'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "compare" -d 'Results side by side against theoretical latency (the forwarding-scenario table)'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "report" -d 'Renders a saved result again: text, JSON, CSV, Markdown or HTML with charts; or a range of a monitor\'s history as one result (--from)'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "monitor" -d 'Watches every path on a schedule: history kept exactly in SQLite, a dashboard, alerts, OpenMetrics for Prometheus'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "lab" -d 'Several hosts on this box: network namespaces joined by emulated links (delay, jitter, loss, rate), services on them, scenarios across them (root)'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "completions" -d 'Prints a shell completion script (bash, zsh, fish, elvish, powershell) to stdout'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "man" -d 'Prints a manual page (roff), or writes them all with --out-dir'
complete -c npt -n "__fish_npt_using_subcommand help; and not __fish_seen_subcommand_from serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "check" -d 'Checks a topology file and prints the plan (addresses, routes, services); no root needed'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "up" -d 'Builds the lab and leaves it running in the background'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "down" -d 'Stops a lab started with `up` and removes everything it created'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "status" -d 'Nodes, links (what each direction applies now and applied so far), services and the changes made by `set` of a running lab'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "set" -d 'Changes a running link\'s impairments: `npt lab set demo client-server delay=80ms loss=2%`. KEY is a topology file key (delay, jitter, loss, loss.model, loss.p, loss.r, loss.bad, loss.good, duplicate, reorder, rate, queue) for both directions, or a_to_b.KEY / b_to_a.KEY for one; KEY=none removes a setting. LINK is its two nodes (A-B, either order) or its number in the file (from 0)'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "exec" -d 'Runs a command on a node of a running lab (`npt` is this npt binary)'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "run" -d 'Builds the lab, runs its scenarios, prints the compare table, tears it down'
complete -c npt -n "__fish_npt_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "daemon" -d 'The background process behind `up` (not for direct use)'
