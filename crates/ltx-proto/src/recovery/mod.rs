//! Loss estimation and redundancy: how much repair to send.
