//! Who may use the console and how: a secret from the environment (never the command line,
//! where `ps` shows it) required beyond loopback, forms that only the console's own pages can
//! post (a per-process token plus the browser's origin headers), read-only mode, and headers
//! that keep pages from being framed, cached or running any script but the console's own.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::state::Console;

/// The environment variable holding the console's secret.
pub const TOKEN_VARIABLE: &str = "NIMBUS_CONSOLE_TOKEN";

/// Who made a request, for the log of actions: the Basic user name where one was given, and
/// the address it came from.
#[derive(Clone, Debug)]
pub struct Operator(pub String);

/// Checks the secret (where one is set), refuses changes in read-only mode and from other
/// sites, and adds the security headers to every response.
pub async fn guard(
    State(console): State<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let user = match &console.token {
        None => Some("local".to_string()),
        Some(token) => authenticated_user(request.headers(), token),
    };
    let Some(user) = user else {
        let mut response =
            (StatusCode::UNAUTHORIZED, "the console needs its token").into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"nimbus console\", charset=\"UTF-8\""),
        );
        return with_security_headers(response);
    };
    if request.method() == Method::POST {
        if console.settings.read_only {
            return with_security_headers(
                (StatusCode::FORBIDDEN, "the console is read-only").into_response(),
            );
        }
        if let Err(why) = same_origin(request.headers()) {
            tracing::warn!(%peer, why, path = %request.uri().path(), "refused a cross-site form post");
            return with_security_headers((StatusCode::FORBIDDEN, why).into_response());
        }
    }
    request
        .extensions_mut()
        .insert(Operator(format!("{user} from {peer}")));
    with_security_headers(next.run(request).await)
}

/// The user name of a request that presents `token`, as `Authorization: Bearer <token>` or as
/// the password of `Authorization: Basic` (any user name; browsers ask for it).
fn authenticated_user(headers: &HeaderMap, token: &str) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    if let Some(bearer) = value.strip_prefix("Bearer ") {
        return same_secret(bearer.trim(), token).then(|| "token".to_string());
    }
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    same_secret(password, token).then(|| {
        if user.is_empty() {
            "token".to_string()
        } else {
            user.chars().take(64).collect()
        }
    })
}

/// Compares secrets in time that does not depend on where they differ.
fn same_secret(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a post that a browser says came from another site: by `Sec-Fetch-Site` where the
/// browser sends it (every current one does), else by `Origin` against `Host`. The form's
/// token is checked as well, by every action.
fn same_origin(headers: &HeaderMap) -> Result<(), &'static str> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return if site == "same-origin" || site == "none" {
            Ok(())
        } else {
            Err("a form of another site cannot act on this console")
        };
    }
    if let (Some(origin), Some(host)) = (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) {
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .unwrap_or(origin);
        if origin_host != host {
            return Err("a form of another origin cannot act on this console");
        }
    }
    Ok(())
}

/// Whether a form carries this console's token: checked by every action.
pub fn form_token_ok(console: &Console, given: &str) -> bool {
    same_secret(given, &console.csrf)
}

fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_token_is_accepted_as_bearer_or_basic_password_only() {
        let basic = |text: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(text)
            )
        };
        let user = |value: &str| authenticated_user(&with(header::AUTHORIZATION, value), "s3cret");
        assert_eq!(user("Bearer s3cret").as_deref(), Some("token"));
        assert_eq!(user(&basic("alice:s3cret")).as_deref(), Some("alice"));
        assert_eq!(user(&basic("alice:wrong")), None);
        assert_eq!(user("Bearer s3cre"), None);
        assert_eq!(authenticated_user(&HeaderMap::new(), "s3cret"), None);
    }

    #[test]
    fn posts_from_other_sites_are_refused() {
        assert!(same_origin(&with(
            header::HeaderName::from_static("sec-fetch-site"),
            "cross-site"
        ))
        .is_err());
        let mut headers = with(header::ORIGIN, "http://evil.example");
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&headers).is_err());
        let mut headers = with(header::ORIGIN, "http://127.0.0.1:8080");
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&headers).is_ok());
        // The browser's own word wins over an Origin it blanked.
        headers.insert(header::ORIGIN, HeaderValue::from_static("null"));
        headers.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(same_origin(&headers).is_ok());
    }
}
