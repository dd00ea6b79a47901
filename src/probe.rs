//! Probing built databases (being written).
