"""What the HTTP level adds to Marquee's web workers: a per-request counter."""
