//! [`S3Archive`]: archived objects in an S3-compatible bucket, under an optional key prefix.
//!
//! Requests are signed with AWS Signature V4 as presigned URLs (`rusty-s3`) and sent through the
//! workspace's one outbound client (`compact-net`: the host's proxies and trusted roots, HTTP/2
//! where offered) from its blocking facade. S3 stores a PUT whole or not at all, so objects are
//! atomic without temp names.

use super::{Archive, ArchiveError, ObjectInfo, ObjectKey};
use compact_net::http::header::CONTENT_LENGTH;
use compact_net::http::{Method, Request};
use compact_net::{BlockingClient, Body};
use rusty_s3::actions::ListObjectsV2;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::time::{Duration, SystemTime};

/// How long a signed request stays valid: it is sent at once, so only clock skew and a slow
/// upload need covering.
const SIGNATURE_TTL: Duration = Duration::from_secs(15 * 60);

/// Longest any request may take, upload or download included, before it fails as unreachable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest answer read: an archived object (a transcript) or a listing page.
const MAX_ANSWER_BYTES: usize = 1 << 30;

/// How much of an error response is kept in [`ArchiveError::Status`].
const ERROR_BODY_CHARS: usize = 300;

/// Where the bucket is and how to sign for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The service's base URL (`https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000`).
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// The region signed for (`us-east-1` when the service does not care).
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
    /// Prepended to every object path (`compact/`), or empty.
    pub prefix: String,
    /// Path-style URLs (`endpoint/bucket/key`; local servers need them) rather than
    /// virtual-host style (`bucket.endpoint/key`).
    pub path_style: bool,
}

/// Archived objects in an S3-compatible bucket.
pub struct S3Archive {
    bucket: Bucket,
    credentials: Credentials,
    prefix: String,
    client: BlockingClient,
}

impl std::fmt::Debug for S3Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("S3Archive")
            .field("bucket", &self.bucket.name())
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A response: status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl S3Archive {
    /// An archive in the bucket `config` names, reached directly (no proxy) and trusting the
    /// system's roots. Nothing is sent yet.
    pub fn new(config: &S3Config) -> Result<Self, ArchiveError> {
        let client = compact_net::Client::direct()
            .map_err(|e| ArchiveError::Config(format!("S3 client: {e}")))?;
        S3Archive::with_client(config, client)
    }

    /// An archive in the bucket `config` names, reached through `client` (the host's, with its
    /// proxies and trusted roots). Nothing is sent yet.
    pub fn with_client(
        config: &S3Config,
        client: compact_net::Client,
    ) -> Result<Self, ArchiveError> {
        let endpoint = url::Url::parse(&config.endpoint)
            .map_err(|e| ArchiveError::Config(format!("endpoint {}: {e}", config.endpoint)))?;
        let style = if config.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket = Bucket::new(
            endpoint,
            style,
            config.bucket.clone(),
            config.region.clone(),
        )
        .map_err(|e| ArchiveError::Config(format!("bucket {}: {e}", config.bucket)))?;
        let client = BlockingClient::new(client)
            .map_err(|e| ArchiveError::Config(format!("S3 client: {e}")))?;
        Ok(S3Archive {
            bucket,
            credentials: Credentials::new(config.access_key.clone(), config.secret_key.clone()),
            prefix: config.prefix.clone(),
            client,
        })
    }

    /// Creates the bucket; an existing bucket of ours is fine.
    pub fn create_bucket(&self) -> Result<(), ArchiveError> {
        let action = self.bucket.create_bucket(&self.credentials);
        let url = action.sign(SIGNATURE_TTL);
        let body = action.body();
        let name = self.bucket.name().to_owned();
        let answer = self.send("create bucket", &name, Method::PUT, &url, body.into_bytes())?;
        match answer.status {
            200..=299 => Ok(()),
            409 if String::from_utf8_lossy(&answer.body).contains("BucketAlreadyOwnedByYou") => {
                Ok(())
            }
            _ => Err(status("create bucket", &name, &answer)),
        }
    }

    fn object_path(&self, key: &ObjectKey) -> String {
        format!("{}{}", self.prefix, key.path())
    }

    /// Sends one signed request and reads the whole answer within [`REQUEST_TIMEOUT`].
    fn send(
        &self,
        op: &'static str,
        key: &str,
        method: Method,
        url: &url::Url,
        body: Vec<u8>,
    ) -> Result<Answer, ArchiveError> {
        let unreachable = |message: String| ArchiveError::Unreachable {
            op,
            key: key.to_owned(),
            message,
        };
        // Said even when 0: S3 servers refuse a PUT without it (411), and an empty body sends none.
        let request = Request::builder()
            .method(method)
            .uri(url.as_str())
            .header(CONTENT_LENGTH, body.len())
            .body(Body::from(body))
            .map_err(|e| unreachable(format!("invalid request: {e}")))?;
        let answer = self
            .client
            .send(request, REQUEST_TIMEOUT, MAX_ANSWER_BYTES)
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(Answer {
            status: answer.status.as_u16(),
            body: answer.body.to_vec(),
        })
    }
}

fn status(op: &'static str, key: &str, answer: &Answer) -> ArchiveError {
    ArchiveError::Status {
        op,
        key: key.to_owned(),
        status: answer.status,
        message: String::from_utf8_lossy(&answer.body)
            .chars()
            .take(ERROR_BODY_CHARS)
            .collect(),
    }
}

/// An S3 `LastModified` time (RFC 3339, `2026-01-01T00:00:00.000Z`).
fn parse_time(text: &str) -> Option<SystemTime> {
    text.parse::<jiff::Timestamp>().ok().map(SystemTime::from)
}

impl Archive for S3Archive {
    fn put(&self, key: &ObjectKey, body: &[u8]) -> Result<(), ArchiveError> {
        let path = self.object_path(key);
        let url = self
            .bucket
            .put_object(Some(&self.credentials), &path)
            .sign(SIGNATURE_TTL);
        let answer = self.send("put", &path, Method::PUT, &url, body.to_vec())?;
        match answer.status {
            200..=299 => Ok(()),
            _ => Err(status("put", &path, &answer)),
        }
    }

    fn get(&self, key: &ObjectKey) -> Result<Option<Vec<u8>>, ArchiveError> {
        let path = self.object_path(key);
        let url = self
            .bucket
            .get_object(Some(&self.credentials), &path)
            .sign(SIGNATURE_TTL);
        let answer = self.send("get", &path, Method::GET, &url, Vec::new())?;
        match answer.status {
            200..=299 => Ok(Some(answer.body)),
            404 => Ok(None),
            _ => Err(status("get", &path, &answer)),
        }
    }

    fn list(&self, session: Option<&str>) -> Result<Vec<ObjectInfo>, ArchiveError> {
        let prefix = match session {
            Some(s) => format!("{}{}/", self.prefix, super::encode_session(s)),
            None => self.prefix.clone(),
        };
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut action: ListObjectsV2<'_> =
                self.bucket.list_objects_v2(Some(&self.credentials));
            action.with_prefix(prefix.as_str());
            if let Some(t) = &token {
                action.with_continuation_token(t.clone());
            }
            let url = action.sign(SIGNATURE_TTL);
            let answer = self.send("list", &prefix, Method::GET, &url, Vec::new())?;
            if !(200..=299).contains(&answer.status) {
                return Err(status("list", &prefix, &answer));
            }
            let text = String::from_utf8_lossy(&answer.body);
            let page = ListObjectsV2::parse_response(&text).map_err(|e| ArchiveError::Corrupt {
                key: prefix.clone(),
                message: format!("listing: {e}"),
            })?;
            for object in page.contents {
                let Some(key) = object
                    .key
                    .strip_prefix(&self.prefix)
                    .and_then(ObjectKey::parse)
                else {
                    continue; // not ours
                };
                let modified = object
                    .last_modified
                    .as_deref()
                    .and_then(parse_time)
                    .ok_or_else(|| ArchiveError::Corrupt {
                        key: object.key.clone(),
                        message: "listed without a readable LastModified".to_owned(),
                    })?;
                out.push(ObjectInfo {
                    key,
                    size: object.size.unwrap_or(0),
                    modified,
                });
            }
            match page.next_continuation_token {
                Some(next) => token = Some(next),
                None => break,
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &ObjectKey) -> Result<(), ArchiveError> {
        let path = self.object_path(key);
        let url = self
            .bucket
            .delete_object(Some(&self.credentials), &path)
            .sign(SIGNATURE_TTL);
        let answer = self.send("delete", &path, Method::DELETE, &url, Vec::new())?;
        match answer.status {
            200..=299 | 404 => Ok(()),
            _ => Err(status("delete", &path, &answer)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn s3_times_parse() {
        let t = parse_time("2026-01-02T03:04:05.000Z").unwrap();
        let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_767_323_045);
        assert!(parse_time("yesterday").is_none());
    }
}
