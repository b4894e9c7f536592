//! [`S3Archive`]: archived objects in an S3-compatible bucket, under an optional key prefix.
//!
//! Requests are signed with AWS Signature V4 as presigned URLs (`rusty-s3`) and sent with a
//! blocking HTTP client (`ureq`; TLS by rustls for `https` endpoints). S3 stores a PUT whole or
//! not at all, so objects are atomic without temp names.

use super::{Archive, ArchiveError, ObjectInfo, ObjectKey};
use rusty_s3::actions::ListObjectsV2;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::time::{Duration, SystemTime};

/// How long a signed request stays valid: it is sent at once, so only clock skew and a slow
/// upload need covering.
const SIGNATURE_TTL: Duration = Duration::from_secs(15 * 60);

/// Longest any request may take, upload or download included, before it fails as unreachable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

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
    agent: ureq::Agent,
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
    /// An archive in the bucket `config` names. Nothing is sent yet.
    pub fn new(config: &S3Config) -> Result<Self, ArchiveError> {
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
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .build()
            .into();
        Ok(S3Archive {
            bucket,
            credentials: Credentials::new(config.access_key.clone(), config.secret_key.clone()),
            prefix: config.prefix.clone(),
            agent,
        })
    }

    /// Creates the bucket; an existing bucket of ours is fine.
    pub fn create_bucket(&self) -> Result<(), ArchiveError> {
        let action = self.bucket.create_bucket(&self.credentials);
        let url = action.sign(SIGNATURE_TTL);
        let body = action.body();
        let name = self.bucket.name().to_owned();
        let answer = self.send(
            "create bucket",
            &name,
            self.agent.put(url.as_str()).send(body),
        )?;
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

    fn send(
        &self,
        op: &'static str,
        key: &str,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Answer, ArchiveError> {
        let unreachable = |e: ureq::Error| ArchiveError::Unreachable {
            op,
            key: key.to_owned(),
            message: e.to_string(),
        };
        let mut response = sent.map_err(unreachable)?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map_err(unreachable)?;
        Ok(Answer { status, body })
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
        let answer = self.send("put", &path, self.agent.put(url.as_str()).send(body))?;
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
        let answer = self.send("get", &path, self.agent.get(url.as_str()).call())?;
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
            let answer = self.send("list", &prefix, self.agent.get(url.as_str()).call())?;
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
        let answer = self.send("delete", &path, self.agent.delete(url.as_str()).call())?;
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
