//! The reader as it was, kept to check the new one against (the tests'
//! capture list is testkit's).
#![allow(dead_code)]

pub mod reference;
