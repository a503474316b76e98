"""Secure serving of the scheduler's port, as kube-scheduler does it on 10259.

  options.py     the flags (--tls-*, --client-ca-file, --authorization-always-allow-paths, --insecure-serving),
                 checked at startup: a bad one ends `pyscheduler run` with exit code 2 naming the flag
  certs.py       the serving certificate: the given files, or an in-memory self-signed CA + server pair
  authn.py       delegated authentication: client certificates, bearer tokens through TokenReview
  authz.py       delegated authorization: always-allowed paths, system:masters, SubjectAccessReview
  expiring.py    the bounded, expiring, single-flight cache behind both answers (10 s, like upstream)
  guard.py       the aiohttp middleware that puts them in front of every handler (401/403/500 bodies)
  limits.py      the limiter of expensive debug calls (one in flight, a small token bucket, 429 beyond)
"""
