//! The timing model's totals and CPI stack of two runs (`run.json`'s `timing`), field by field.

use crate::input::RunView;
use serde::Serialize;
use serde_json::{Map, Value};

/// One number of A and B.
#[derive(Clone, Debug, Serialize)]
pub struct NumberRow {
    /// The field (`cycles`, `l1d_misses`, a CPI-stack cause…).
    pub name: String,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// B − A.
    pub delta: f64,
}

/// The difference of two runs' timing totals.
#[derive(Clone, Debug, Serialize)]
pub struct TimingDiff {
    /// Every numeric total both runs have, in A's order.
    pub totals: Vec<NumberRow>,
    /// The CPI stack's causes (cycles), by absolute change; they sum to the cycles.
    pub cpi_stack: Vec<NumberRow>,
}

fn numbers(m: &Map<String, Value>) -> Vec<(String, f64)> {
    m.iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
        .collect()
}

fn rows(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<NumberRow> {
    let nb = numbers(b);
    numbers(a)
        .into_iter()
        .filter_map(|(k, x)| {
            let y = nb.iter().find(|(kb, _)| *kb == k)?.1;
            Some(NumberRow {
                name: k,
                a: x,
                b: y,
                delta: y - x,
            })
        })
        .collect()
}

/// The timing difference, when both runs were timed.
pub fn diff_timing(a: &RunView, b: &RunView) -> Option<TimingDiff> {
    let (ta, tb) = (a.timing.as_ref()?, b.timing.as_ref()?);
    let empty = Map::new();
    let stack = |t: &Map<String, Value>| t.get("cpi_stack").and_then(Value::as_object).cloned();
    let (sa, sb) = (stack(ta), stack(tb));
    let mut cpi_stack = rows(sa.as_ref().unwrap_or(&empty), sb.as_ref().unwrap_or(&empty));
    cpi_stack.sort_by(|x, y| {
        y.delta
            .abs()
            .total_cmp(&x.delta.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    Some(TimingDiff {
        totals: rows(ta, tb),
        cpi_stack,
    })
}
