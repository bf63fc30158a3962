//! TinyMT32 (RFC 8682) and the coding coefficients of RFC 8681.
