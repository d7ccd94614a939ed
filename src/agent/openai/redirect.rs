//! Model-server redirects are never followed: a 307/308 would
//! re-post the whole conversation (and the key) to wherever the server
//! points, a 302 would make the daemon fetch an arbitrary URL every turn,
//! and either may downgrade https to http. The clients are built with
//! [`policy`]; a 3xx answer is a `provider_protocol` failure naming the
//! status and the `Location` the server gave ([`refused`]).

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::StatusCode;

use crate::bounded::bound_text;

/// Bytes of a `Location` kept in the message.
const MAX_LOCATION_BYTES: usize = 512;

/// The redirect policy of every model-server client: none.
pub fn policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::none()
}

/// The message for a redirect answer (`status` 3xx), `None` for any other.
pub fn refused(status: StatusCode, headers: &HeaderMap) -> Option<String> {
    if !status.is_redirection() {
        return None;
    }
    let location = headers
        .get(LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let to = match &location {
        Some(l) => format!("to {:?}", bound_text(l, MAX_LOCATION_BYTES)),
        None => "without a Location".to_owned(),
    };
    Some(format!(
        "HTTP {} redirect {to} refused: redirects are never followed; set base_url to where the model server answers",
        status.as_u16()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_3xx_is_refused_and_the_message_names_status_and_location() {
        let mut h = HeaderMap::new();
        h.insert(LOCATION, "http://10.0.0.1/x".parse().unwrap());
        assert_eq!(
            refused(StatusCode::TEMPORARY_REDIRECT, &h).unwrap(),
            "HTTP 307 redirect to \"http://10.0.0.1/x\" refused: redirects are never followed; set base_url to where the model server answers"
        );
        assert!(refused(StatusCode::FOUND, &HeaderMap::new())
            .unwrap()
            .starts_with("HTTP 302 redirect without a Location refused"));
        assert_eq!(refused(StatusCode::OK, &h), None);
        assert_eq!(refused(StatusCode::NOT_FOUND, &h), None);
    }
}
