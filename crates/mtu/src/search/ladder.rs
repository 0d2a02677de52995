//! One direction's search for the largest datagram that crosses: a bracket — the largest size
//! that crossed, the smallest that did not — narrowed by bisection, or jumped by an MTU figure
//! (an ICMP's, an interface's) when one is known. Pure bookkeeping; [`super::Search`] times it.

/// Why the smallest size that did not cross did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Lost every try, and no ICMP said why: a black hole (or a path that drops DF packets).
    Lost,
    /// An ICMP "fragmentation needed" / "packet too big" came back with `mtu`.
    Icmp { mtu: u32 },
    /// The sending host's own interface refused it (its MTU `mtu`).
    Local { mtu: u32 },
}

/// One direction's bracket.
#[derive(Clone, Debug)]
pub struct Ladder {
    /// The smallest and largest sizes searched.
    pub min: usize,
    pub max: usize,
    /// The largest size that crossed.
    pub lo: Option<usize>,
    /// The smallest size that did not, and why.
    pub hi: Option<(usize, Limit)>,
    /// A size an MTU figure says to try next.
    hint: Option<usize>,
    /// Crossings above a size counted as lost (loss read as MTU, then contradicted).
    pub contradicted: u32,
}

impl Ladder {
    pub fn new(min: usize, max: usize) -> Ladder {
        Ladder {
            min,
            max: max.max(min),
            lo: None,
            hi: None,
            hint: None,
            contradicted: 0,
        }
    }

    /// The next size to try; None when the bracket is as narrow as it gets.
    pub fn next_size(&mut self) -> Option<usize> {
        let lo = self.lo;
        let Some((hi, _)) = self.hi else {
            // Nothing failed yet: the largest first (most paths carry it), then done.
            return (lo != Some(self.max)).then_some(self.max);
        };
        if hi <= self.min {
            return None; // not even the smallest crossed
        }
        let floor = lo.unwrap_or(self.min - 1);
        if hi <= floor + 1 {
            return None;
        }
        if let Some(h) = self.hint.take() {
            if h > floor && h < hi {
                return Some(h);
            }
        }
        // Below anything known: the smallest first, so a dead path is not bisected.
        if lo.is_none() {
            return Some(self.min);
        }
        Some(floor + (hi - floor) / 2)
    }

    /// `size` crossed.
    pub fn crossed(&mut self, size: usize) {
        if self.lo.is_none_or(|l| size > l) {
            self.lo = Some(size);
        }
        if let Some((hi, why)) = self.hi {
            if hi <= size {
                // A size counted as not crossing did cross: loss, not MTU.
                if why == Limit::Lost {
                    self.contradicted += 1;
                }
                self.hi = None;
            }
        }
    }

    /// `size` did not cross, for `why`; `mtu_size` is the largest size the MTU figure allows
    /// (an ICMP's or an interface's MTU less the headers), tried next.
    pub fn failed(&mut self, size: usize, why: Limit, mtu_size: Option<usize>) {
        if self.lo.is_some_and(|l| size <= l) {
            return; // it crossed before: this one was lost on the way
        }
        match self.hi {
            Some((h, _)) if h < size => {}
            Some((h, old)) if h == size && old != Limit::Lost && why == Limit::Lost => {}
            _ => self.hi = Some((size, why)),
        }
        if let Some(m) = mtu_size {
            self.hint = Some(m);
        }
    }

    /// True when the largest size searched crossed.
    pub fn all_crossed(&self) -> bool {
        self.lo == Some(self.max)
    }
}
