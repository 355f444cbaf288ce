//! IEEE 754 floating point for the F and D extensions (being written).
