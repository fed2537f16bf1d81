//! The web tools against real HTTP servers on 127.0.0.1, through the real HTTP client.

mod fetch;
mod html;
mod search;
mod support;
