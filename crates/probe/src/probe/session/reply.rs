//! What arrives for a probe session: echo replies (timed, classified by the sequence window,
//! and read for what the far end saw), refusal notices and the far end's flow report. Raw and
//! framed replies are parsed here; a sender that parses its own replies (STAMP) hands them in
//! through [`Session::handle_parsed`].

use npt_result::packets::{Direction, Fate};
use npt_stats::{Histogram, JitterMean};
use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;
use npt_wire::reflect::{self, STAMP_LEN};
use npt_wire::{fill, Outcome};

use super::far::{npt_notice, FarEnd, RefusalWhy};
use super::split::Final;
use super::who::{self, Responder};
use super::{types, Arrival, Framing, Session, State};

/// One reply as its framing reads, before the sequence window classifies it.
#[derive(Clone, Copy, Debug)]
pub struct Parsed<'a> {
    pub flow: u32,
    pub seq: u64,
    /// The send stamp the reply carried back (session clock).
    pub send_ts: u64,
    /// The reply's length (must be the session's packet size).
    pub len: usize,
    /// The fill as echoed, checked against what was sent under `verify` (None: not checked).
    pub payload: Option<&'a [u8]>,
    /// What the far end said it saw, if anything.
    pub far: Option<FarEnd>,
    /// Which far end sent it.
    pub from: Responder,
    /// What the far end said of the marking (the TOS byte the request arrived with, the one
    /// it sent the reply with), when asked and it said ([`npt_wire::marking`]).
    pub marks: Option<(u8, u8)>,
}

/// What a datagram or frame is, for this session.
enum Incoming<'a> {
    Reply(Parsed<'a>),
    Notice {
        seq: u64,
        why: RefusalWhy,
        refused: Option<u32>,
    },
    Report(Final),
    Foreign,
}

impl Session {
    /// Handles `bytes` if they are one of this flow's replies (right framing, flow and size)
    /// and returns true; otherwise counts nothing and returns false (a TCP stream that lost its
    /// step, see [`super::super::stream`]).
    pub fn try_handle_reply(&mut self, now: u64, bytes: &[u8]) -> bool {
        let ours = bytes.len() == self.cfg.size
            && matches!(self.incoming(bytes), Incoming::Reply(p) if p.flow == self.cfg.flow);
        if ours {
            self.handle_reply(now, bytes);
        } else {
            self.note_foreign(bytes);
        }
        ours
    }

    /// Keeps what the first foreign reply looked like, for the report.
    fn note_foreign(&mut self, bytes: &[u8]) {
        if self.totals.foreign_example.is_none() {
            let flags = self.request_flags();
            self.totals.foreign_example = Some(who::describe_foreign(&self.cfg, flags, bytes));
        }
    }

    /// Handles one received datagram or frame.
    pub fn handle_reply(&mut self, now: u64, bytes: &[u8]) {
        for r in bytes.chunks(self.reply_len_in(bytes)) {
            self.handle_arrival(now, r);
        }
    }

    /// How long each reply in a received datagram is: its whole length, or the packet size
    /// when it is several of this flow's requests back to back. A plain echo that passes its
    /// datagrams through a stream (socat's `PIPE`) returns two that queued together as one
    /// datagram; each is an unchanged request, so each is a reply (the drivers hand them in
    /// one by one: `bytes.chunks(session.reply_len_in(bytes))`). Never 0.
    pub fn reply_len_in(&self, bytes: &[u8]) -> usize {
        let size = self.cfg.size;
        if bytes.len() <= size || !bytes.len().is_multiple_of(size) {
            return bytes.len().max(1);
        }
        let flags = self.request_flags();
        let all_ours = bytes.chunks(size).all(|c| {
            Header::decode(c).is_ok_and(|h| {
                h.frame_len as usize == size && who::is_own_request(&self.cfg, flags, &h)
            })
        });
        if all_ours && self.cfg.auth.is_none() {
            size
        } else {
            bytes.len()
        }
    }

    /// [`handle_reply`](Session::handle_reply), telling the driver what the bytes were: the
    /// RTT of an on-time reply, for a driver that hands samples on itself (see
    /// [`take_progress`](Session::take_progress)).
    pub fn handle_arrival(&mut self, now: u64, bytes: &[u8]) -> Arrival {
        if self.state == State::Done {
            // After the end (a second Ctrl-C abandons what is in flight): counted, not measured.
            self.totals.stale += 1;
            return Arrival::Ignored;
        }
        match self.incoming(bytes) {
            Incoming::Reply(p) => self.handle_parsed(now, p),
            Incoming::Notice { seq, why, refused } => {
                self.expire(now);
                let in_flight = seq >= self.window.settled_below() && seq < self.window.next_seq();
                self.split
                    .on_notice(seq, in_flight, why, refused, &mut self.totals.dir);
                Arrival::Refused
            }
            Incoming::Report(fin) => {
                self.on_report(now, fin);
                Arrival::Ignored
            }
            Incoming::Foreign => {
                self.totals.foreign += 1;
                self.note_foreign(bytes);
                Arrival::Ignored
            }
        }
    }

    fn incoming<'a>(&self, bytes: &'a [u8]) -> Incoming<'a> {
        match self.cfg.framing {
            Framing::Framed { .. } => {
                let Ok(h) = Header::decode(bytes) else {
                    return Incoming::Foreign;
                };
                if h.frame_len as usize != bytes.len() || h.flow != self.cfg.flow {
                    return Incoming::Foreign;
                }
                if matches!(h.kind, Kind::EchoReply | Kind::FlowReport) {
                    if let Some((seq, why, refused)) = npt_notice(&h, bytes.len()) {
                        // Notices carry no tag (the far end refused the frame unread). A
                        // refused flow query's notice says why; the query is asked again.
                        let seq = if h.kind == Kind::EchoReply {
                            seq
                        } else {
                            u64::MAX
                        };
                        return Incoming::Notice { seq, why, refused };
                    }
                }
                if let Some(k) = &self.cfg.auth {
                    if k.open(npt_wire::auth::Dir::ToClient, bytes).is_err() {
                        return Incoming::Foreign;
                    }
                }
                match h.kind {
                    Kind::EchoReply => Incoming::Reply(Parsed {
                        flow: h.flow,
                        seq: h.seq,
                        send_ts: h.send_ts,
                        len: bytes.len(),
                        payload: bytes.get(self.cfg.framing.header_len()..),
                        far: FarEnd::of_npt(&h, bytes),
                        from: Responder::NptServe,
                        marks: npt_wire::marking::read_reply(&h).map(|m| (m.seen, m.sent)),
                    }),
                    // A plain echo: the request came back as it was sent.
                    Kind::Echo if who::is_own_request(&self.cfg, self.request_flags(), &h) => {
                        Incoming::Reply(Parsed {
                            flow: h.flow,
                            seq: h.seq,
                            send_ts: h.send_ts,
                            len: bytes.len(),
                            payload: bytes.get(self.cfg.framing.header_len()..),
                            far: None,
                            from: Responder::Echo,
                            marks: None,
                        })
                    }
                    Kind::FlowReport if bytes.len() == reflect::FLOW_QUERY_LEN => {
                        match reflect::read_report(&h, bytes) {
                            Some(r) => Incoming::Report(Final::Report(r)),
                            None if h.status == npt_wire::frame::status::UNKNOWN_FLOW => {
                                Incoming::Report(Final::UnknownFlow)
                            }
                            None => Incoming::Foreign,
                        }
                    }
                    _ => Incoming::Foreign,
                }
            }
            Framing::Raw => match RawStamp::decode(bytes) {
                Ok(s) => Incoming::Reply(Parsed {
                    flow: s.flow,
                    seq: s.seq,
                    send_ts: s.send_ts,
                    len: bytes.len(),
                    payload: bytes.get(self.cfg.framing.header_len()..),
                    far: None,
                    from: Responder::Echo,
                    marks: None,
                }),
                Err(_) => Incoming::Foreign,
            },
            // One flow per connected socket: whatever the reflector answers on it is this
            // flow's (RFC 8762 has no flow field).
            Framing::Stamp(f) => {
                let key = self.cfg.stamp_key.as_ref();
                match f.decode(key, self.window.next_seq(), bytes) {
                    Some((seq, send_ts, r)) => Incoming::Reply(Parsed {
                        flow: self.cfg.flow,
                        seq,
                        send_ts,
                        len: bytes.len(),
                        payload: bytes.get(self.cfg.framing.header_len()..),
                        far: Some(f.far_end(&r)),
                        from: Responder::Stamp,
                        marks: None,
                    }),
                    None => Incoming::Foreign,
                }
            }
        }
    }

    /// The echo payload as sent, from the far end's stamps on when it wrote them.
    fn payload_intact(&mut self, seq: u64, payload: &[u8], stamped: bool) -> bool {
        let skip = if stamped { STAMP_LEN } else { 0 };
        self.scratch.clear();
        self.scratch.resize(payload.len(), 0);
        fill::fill(self.cfg.fill, self.cfg.fill_seed, seq, &mut self.scratch);
        payload.get(skip..) == self.scratch.get(skip..)
    }

    /// One reply, already parsed: classified by the sequence window, timed, and read for what
    /// the far end saw. The entry point of a sender with its own framing (STAMP).
    pub fn handle_parsed(&mut self, now: u64, p: Parsed<'_>) -> Arrival {
        if self.state == State::Done {
            self.totals.stale += 1;
            return Arrival::Ignored;
        }
        if p.flow != self.cfg.flow || p.len != self.cfg.size {
            self.totals.foreign += 1;
            return Arrival::Ignored;
        }
        let from = p.from;
        let seq = p.seq;
        // Deadlines first, so a reply after its timeout is late, never on time.
        self.expire(now);
        let outcome = self.window.on_reply(seq);
        let arrival = p.len as u64;
        let far = p.far.as_ref();
        let what = match outcome {
            Outcome::OnTime { slot, reordered } => {
                if p.send_ts != slot.sent {
                    // The echo did not carry our stamp back intact.
                    self.totals.corrupt += 1;
                }
                let rtt = now.saturating_sub(slot.sent);
                if self.cfg.verify {
                    if let Some(payload) = p.payload {
                        // npt serve writes its stamps over the payload's front; a STAMP
                        // reflector's fields are in the base, before the payload.
                        let framed = matches!(self.cfg.framing, Framing::Framed { .. });
                        let stamped = framed && far.is_some_and(|f| f.rx_wall_ns.is_some());
                        if !self.payload_intact(seq, payload, stamped) {
                            self.totals.corrupt += 1;
                        }
                    }
                }
                let hist = self.histograms;
                let settled = self.window.settled_below();
                let (dir, placed) = (&mut self.totals.dir, &mut self.placed);
                self.split
                    .on_first_reply(seq, false, far, settled, dir, placed);
                if let Some(f) = far {
                    let dir = &mut self.totals.dir;
                    let offset = self.wall_offset;
                    self.split.on_timing(now, slot.sent, offset, f, dir, hist);
                }
                let t = &mut self.totals;
                t.packets.received += 1;
                t.bytes_down += arrival;
                if hist {
                    t.rtt.record(rtt);
                    if self.cfg.pacing.is_open_loop() {
                        t.rtt_corrected.record(now.saturating_sub(slot.intended));
                    }
                    if let Some(bounds) = self.cfg.phases {
                        if t.phase_rtt.is_empty() {
                            t.phase_rtt.resize_with(3, Histogram::new);
                        }
                        if let Some(h) = t.phase_rtt.get_mut(types::phase_of(bounds, slot.sent)) {
                            h.record(rtt);
                        }
                    }
                }
                if self.cfg.mark.is_some() {
                    t.marking.count_reply(self.arrival_tos, p.marks);
                }
                t.first_reply.get_or_insert(now);
                t.first_rtt.get_or_insert(rtt);
                t.last_reply = Some(now);
                if reordered {
                    t.packets.reordered += 1;
                }
                let sampled = self.jitter.record(rtt);
                if let (Some(d), true) = (sampled, hist) {
                    self.totals.ipdv.record(d);
                }
                let j = self.jitter.value_ns();
                if let Some(iv) = self.interval_mut(slot.tag) {
                    iv.packets.received += 1;
                    iv.bytes_down += arrival;
                    if hist {
                        iv.rtt.record(rtt);
                    }
                    let n = iv.jitter.samples() + u64::from(sampled.is_some());
                    iv.jitter = JitterMean::from_value(j, n);
                    if reordered {
                        iv.packets.reordered += 1;
                    }
                }
                self.pacer.on_reply(now);
                if let Some(log) = &mut self.log {
                    log.reply(seq, Some(slot.sent), Fate::Received, Some(rtt), None);
                }
                Arrival::OnTime { rtt }
            }
            Outcome::Late { reordered } => {
                let settled = self.window.settled_below();
                let (dir, placed) = (&mut self.totals.dir, &mut self.placed);
                self.split
                    .on_first_reply(seq, true, far, settled, dir, placed);
                self.totals.packets.late += 1;
                self.totals.bytes_down += arrival;
                if reordered {
                    self.totals.packets.reordered += 1;
                }
                if let Some(iv) = self.newest_mut() {
                    iv.packets.late += 1;
                    iv.bytes_down += arrival;
                }
                if let Some(log) = &mut self.log {
                    // Sent at the stamp the echo carried back (the slot is retired).
                    let rtt = now.checked_sub(p.send_ts);
                    log.reply(seq, Some(p.send_ts), Fate::Late, rtt, None);
                }
                Arrival::Late
            }
            Outcome::Duplicate => {
                let (up, down) = (self.totals.dir.dup_up, self.totals.dir.dup_down);
                self.split.on_duplicate(seq, far, &mut self.totals.dir);
                if let Some(log) = &mut self.log {
                    let d = &self.totals.dir;
                    let direction = if d.dup_up > up {
                        Some(Direction::Up)
                    } else if d.dup_down > down && far.is_some_and(|f| f.rx_count.is_some()) {
                        Some(Direction::Down)
                    } else {
                        None
                    };
                    let rtt = now.checked_sub(p.send_ts);
                    log.reply(seq, Some(p.send_ts), Fate::Duplicate, rtt, direction);
                }
                self.totals.packets.duplicated += 1;
                self.totals.bytes_down += arrival;
                if let Some(iv) = self.newest_mut() {
                    iv.packets.duplicated += 1;
                    iv.bytes_down += arrival;
                }
                Arrival::Duplicate
            }
            Outcome::Stale => {
                self.totals.stale += 1;
                Arrival::Ignored
            }
            Outcome::Unknown => {
                self.totals.foreign += 1;
                Arrival::Ignored
            }
        };
        if what != Arrival::Ignored {
            who::count(&mut self.totals.answered, from);
        }
        let settled = self.window.settled_below();
        self.split.advance(settled, &mut self.placed);
        self.apply_placed();
        self.maybe_finish(now);
        what
    }
}
