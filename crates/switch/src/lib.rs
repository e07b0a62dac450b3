//! An OpenFlow 1.3 switch with Open vSwitch's datapath caches.

mod flow;
