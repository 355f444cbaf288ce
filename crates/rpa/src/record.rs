//! Records from the retire stream (§3.1, Table 2): which class an instruction belongs to, and
//! the words a query collects, from a retire record and, for implementation information, its
//! timing stamp.

use crate::names::{self, Class};
use outcrop_events::record::{Class as RClass, Retire, Stamp, TimingEvents};

/// Table 1 class (index in [`names::OP_CLASSES`]) of a retired instruction; `None` when the
/// source could not decode it.
pub fn op_class(r: &Retire) -> Option<u8> {
    Some(match r.class? {
        RClass::Jump => 0,
        RClass::Branch => 1,
        RClass::Load => 2,
        RClass::Store => 3,
        RClass::Alu => 4,
        RClass::Mult => 5,
        RClass::Float => 6,
        RClass::Sys => 7,
    })
}

/// The PCT class of a retired instruction with profile tag `tag`.
pub fn class_of(r: &Retire, tag: u8) -> Option<Class> {
    Some(Class::Op {
        class: op_class(r)?,
        tag: tag & 3,
    })
}

/// Items that need a timing model but are not modelled yet.
pub const NOT_YET: [&str; 3] = ["frate", "drate", "irate"];

/// Why a record cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// An implementation item without a timing model.
    #[error(
        "`{0}` is implementation information: run with a timing model (--timing) to collect it"
    )]
    NeedsTiming(&'static str),
    /// An item the timing model does not provide yet.
    #[error(
        "`{0}` is not provided by Outcrop's timing model yet (fetch, dispatch and issue rates)"
    )]
    NotModelled(&'static str),
}

/// Checks that every item of `items` can be collected, with or without timing.
pub fn check_items(items: &[u8], timing: bool) -> Result<(), RecordError> {
    for &i in items {
        let name = names::ITEMS[usize::from(i)];
        if let Some(n) = NOT_YET.iter().find(|n| **n == name) {
            return Err(RecordError::NotModelled(n));
        }
        if let Some(n) = names::TIMING_ITEMS.iter().find(|n| **n == name && !timing) {
            return Err(RecordError::NeedsTiming(n));
        }
    }
    Ok(())
}

/// One item's word. For a store, `op1` is the value written, `op2` the base address register
/// and `op3` the offset (Figure 2c relies on `op1`); otherwise `op1`/`op2` are the source
/// registers. `misc`: bit 0 taken, bit 1 mispredicted (with timing), bit 2 exception (none
/// retire here). Items [`check_items`] refuses read as 0.
pub fn word(item: u8, r: &Retire, s: Option<&Stamp>) -> u32 {
    let store = r.class == Some(RClass::Store);
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    let (op1, op2, op3) = if store {
        (r.mem_value, r.src1, r.mem_addr.wrapping_sub(r.src1))
    } else {
        (r.src1, r.src2, 0)
    };
    let t = |f: fn(&Stamp) -> u64| s.map_or(0, |s| f(s) as u32);
    match names::ITEMS[usize::from(item)] {
        "pc" => lo(r.pc),
        "thread" => r.thread,
        "op1" => lo(op1),
        "op1up" => hi(op1),
        "op2" => lo(op2),
        "op2up" => hi(op2),
        "op3" => lo(op3),
        "res1" => lo(r.result.unwrap_or(0)),
        "res1u" => hi(r.result.unwrap_or(0)),
        "res2" if r.mem_size > 0 => lo(r.mem_addr),
        "misc" => {
            let mispredicted = s.is_some_and(|s| s.events.contains(TimingEvents::MISPREDICT));
            u32::from(r.taken) | u32::from(mispredicted) << 1
        }
        "ftime" => t(|s| s.fetch),
        "rtime" => t(|s| s.retire),
        "wlat" => t(|s| s.retire.saturating_sub(s.dispatch)),
        "elat" => t(|s| s.complete.saturating_sub(s.issue)),
        "rrate" => s.map_or(0, |s| {
            u32::from(s.retire_group) | s.retire_stall.min(0xffff) << 16
        }),
        _ => 0,
    }
}

/// The record of `items` (record order) for `r`: up to 7 words, unused words 0.
pub fn build(items: &[u8], r: &Retire, s: Option<&Stamp>) -> [u32; crate::queue::RECORD_WORDS] {
    let mut w = [0u32; crate::queue::RECORD_WORDS];
    for (slot, &i) in w.iter_mut().zip(items) {
        *slot = word(i, r, s);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Retire {
        Retire {
            pc: 0x1_0000_1234,
            class: Some(RClass::Store),
            src1: 0x8000,
            src2: 0xdead_beef_0000_0001,
            mem_addr: 0x8010,
            mem_size: 8,
            mem_value: 0xdead_beef_0000_0001,
            ..Retire::default()
        }
    }

    #[test]
    fn a_store_record_has_the_value_written_in_op1() {
        let items: Vec<u8> = ["pc", "op1", "op1up", "op2", "op3", "res2"]
            .iter()
            .map(|n| names::item(n).unwrap())
            .collect();
        let w = build(&items, &store(), None);
        assert_eq!(w, [0x1234, 1, 0xdead_beef, 0x8000, 0x10, 0x8010, 0]);
        assert_eq!(class_of(&store(), 1), Some(Class::Op { class: 3, tag: 1 }));
    }

    #[test]
    fn timing_items_come_from_the_stamp_and_need_it() {
        let s = Stamp {
            fetch: 100,
            dispatch: 104,
            issue: 106,
            complete: 109,
            retire: 111,
            retire_group: 2,
            retire_stall: 3,
            events: TimingEvents::MISPREDICT,
        };
        let r = Retire {
            class: Some(RClass::Branch),
            taken: true,
            ..Retire::default()
        };
        let items: Vec<u8> = ["misc", "ftime", "wlat", "elat", "rtime", "rrate"]
            .iter()
            .map(|n| names::item(n).unwrap())
            .collect();
        assert_eq!(
            build(&items, &r, Some(&s)),
            [3, 100, 7, 3, 111, 2 | 3 << 16, 0]
        );
        assert_eq!(check_items(&items, true), Ok(()));
        assert_eq!(
            check_items(&items, false),
            Err(RecordError::NeedsTiming("ftime"))
        );
        let frate = [names::item("frate").unwrap()];
        assert_eq!(
            check_items(&frate, true),
            Err(RecordError::NotModelled("frate"))
        );
        let arch: Vec<u8> = ["pc", "misc", "op1"]
            .iter()
            .map(|n| names::item(n).unwrap())
            .collect();
        assert_eq!(check_items(&arch, false), Ok(()));
    }
}
