/**
 * Fixed test vectors: keys made with `ssh-keygen` (OpenSSH 9.2) and the fingerprints and sizes
 * `ssh-keygen -lf` printed for them. The private halves were thrown away.
 */
export const KEYS = {
  ed25519: {
    line: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHdejSyP0MbFpa/V1oie2EHxPcFTe7MzJT9V1WeihEyT ada@laptop",
    fingerprint: "SHA256:ZyPgpiL2h0gq2cSlsSnIx7DX6bT4hfrrikbhjpDBWBI",
    bits: 256,
  },
  ed25519Other: {
    line: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII/oyW/7+B0iwqdC7HAACs8SRJYunMSGx272KXjjMJSm second@box",
    fingerprint: "SHA256:HM99+hM/h3WJvvyyTM8q5ZtE9PBRbKdsL3sPNaiUc3g",
    bits: 256,
  },
  rsa2048: {
    line: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC/mwIx20VCQHvAl6YIogGpsYbBAE+bapCXTkc7NrFDPdtyi8WWx/MhTDBLiPLamlvtXxXeJIvvVrzlyqdsjWGiZB/UCYkVx/tRQtJapK0rMjmspDoTza5/wbLvr2mTw3i0A8VvQ7NkNul2wNn8x1Zmk1/EbFP5eRB2t1stiBAf856bdfDhDb6veYE7Cuo603+GGPZ4L8kMx3vmr92B/0pobSaYnQ+F8TyT47Y6XHWrC1JOqh+sOxnTV4wl6/BN7W0/mHMFIkBr0Sk/KXUxg9p+QBmhGBwFQ1m6Cl4UH1fnYNiVemOdSZXIEy4OIvX3k/ojtjs940J/jaTaVEuJetVz rsa2048@ci",
    fingerprint: "SHA256:sbGkay1geCvMBXLVtp2KhAsKcWgpcOUMlLL4zYkYo2k",
    bits: 2048,
  },
  rsa4096: {
    line: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAACAQDPwnjx800/uGTWjUFqFFKS1xZj/xXWK+BcMiWhEdkP/BiNfpIZ4amWiVxOMh+bemopTnmRmP69nFNS/6v+wxXfLqFkCzdc5x42Dn8SKvZVzTxFouk9u2Hx8Sv9XlbJKqMQhn1C56GrGsmrPtiIozmXLMxiVIi/KJDF4SYbTq2kth6QJcNfuwb3gpcbCULdzcXqN4AakULd2GPfh531F6nFecyYao+z21Eoasw18MpXsUppX+oq+ZTd5SR5HvPLkwaDY14Wl0KyyU7HPbcMtpr02GImsM7xcq/nlNpeKi03BCvd+kMUf5aYymVaguSQRdzzyzyXuKUCq41mUc8vxK0ZCMP+H22abHY77J0Zc1pG3Lhl9ZpTPMKDxUlw/bxKwPC1b6/iSBnJ5Ra9CMXN8JbYCwd9fCcv+Bb9DXul5qDAv6VJo/TrPPCWlpTz+YhTifTqWX/5BUJy9iXyap6tbab2U9xuI5PWNxq9Lk8f2XKBftN/CPm9/ZlINiuXtNZ+nO/gq2b0CQDtKaO6Vq1pM2AvQXvOReRN6dNw2xxmjFUuBruHoaAOIhpdbSnDLkkmJTonEx1xsDPe13EqldqjLE3HGQPXN/MrRTVPb55T7Fx5RZMKG4kwXimIWoRd3J2vFx0lpBVWYVxYXkaeCKLPj5k5KyIG0CQpfghsvRFvjz/Gmw== ",
    fingerprint: "SHA256:R2ok7nk37a2itIHdwNpv99Yce/X3AsyhSmf0fg/C524",
    bits: 4096,
  },
  ecdsa256: {
    line: "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBC/aymVVCJjqvVYlpsJtS7FRAWpRcn3lF/m0tIm52dHRdji7b1llzCoespxcPbNi7JdQi1rl0wRGFzmPkP5S/t4= ec256 with spaces in comment",
    fingerprint: "SHA256:pW0vQBwyFuPP2sKtTySeNLRpE3N6RmcO17Jn/bXvGkY",
    bits: 256,
  },
  ecdsa384: {
    line: "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBL1ab4TmzK/2fml8M8Qx4vqfVLOYDh9ElRoWSwupgHqMGIOMgacsCIG9RPi6NCWhbxdrpFcj9n+pNsN/9+fkKam4SAmQvxHI8/7loRjij4c97g3WcpQzKIvEdHuQM5F9OQ== ec384@host",
    fingerprint: "SHA256:mqqVM3Qne4VqrrcxqSwA/UgzM4sC7tKg0TVhYk6mCck",
    bits: 384,
  },
  ecdsa521: {
    line: "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAE8R453NjsxyYzznfFvkSSK1c9Cubaf7fLGGAQEHgnpAHQUBv1CE7ozMIOAEweNxN7Kb5GXEgEcNtOHxqi4pEhJzgGK0vK2TFUr5Rm2q/3JLiNQwLfoR2TeDzRI6sTUQhQ/qvAiJKQbMh2OQYa9IYfQKReUQ7MtR536/jFqvrEqxFhoNQ== ec521@host",
    fingerprint: "SHA256:0ngq5xBdmkztLRieWFucLmrWVcwNqSypDA03XqatULU",
    bits: 521,
  },
  rsa1024: {
    line: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC+COb/Lkq/RrXsJLUzHhVnkKbMDjd0bsG98AalRMybCfNaKTChEnS+5F1ZAOxlsLqzUjfr4V740qclP4wlCGezjIExnzBNWhcZCiUsJVinA98yzL+JHV/3tKtJ7GPCuL/+8BiczhcC5rfB8bgGnQsH5S3XWPNqs8iyRerAbcp67Q== weak@old",
    fingerprint: "SHA256:x95PJXcCBiouVARNJH8+GWYwjlcK/Nw0pVYQmxNGmPE",
    bits: 1024,
  },
  dsa: {
    line: "ssh-dss AAAAB3NzaC1kc3MAAACBAO7T2cIgmmmv3djEPI8oc4rRnFZwbHmcqH7wBr5LNY+m3VoNpVohTmEr4d1I2GYq7NarfFCve8fKF2WH1gRmNKFW557OZoyGP7m3hMobtdbzYkehJrh89GIchiYcqEaqbkntIyngC/bkuM6acaxLV8yk54H6zr6Edq0XXOQKjyO5AAAAFQCEWsJ6xTsP3GP+W2hiQMfhhsdrQQAAAIAn+fz7akQL5bTvKCXRf3bKgzRqkPkoQT0zHhr7AHmARlqH0zmsrfSp2yIfPdgGbGXikhHqFUytvlTgp1+9AhPFxeQBWg+kb+OEVHWoQwWEHEQd0wsQn9NTRMmN6pPuyzjN/KtgeiHAbzbTX8+UMsSExqjp74wa91JpBmc6alB5BQAAAIACWBmTS5tODZkIbE8rQTl9R8eqw7Htk73SMj4QyuBVxsbVTEekH9GkfBNinpe7HUi0KKe7gzNG1XHSaZQZIBtI4GK8uwIBeYGo7GcfiXsYvqyocNDLOcjdA/Tg1e+kohOxHZfXEN/27sj09VPwkXYa0yAu3z7npb0YnX2UFdNCVw== dsa@old",
    fingerprint: "SHA256:QH0wIQ2SpHAFcaR5+5RWTJE95GjMr8vC1hYyyE1+q1s",
    bits: 1024,
  },
} as const;

/** The head of the private half of `KEYS.ed25519`, as someone might paste it by mistake. */
export const PRIVATE_KEY = [
  "-----BEGIN OPENSSH PRIVATE KEY-----",
  "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
  "QyNTUxOQAAACB3Xo0sj9DGxaWv1daInthB8T3BU3uzMyU/VdVnooRMkwAAAJAB5mkxAeZp",
  "…",
  "-----END OPENSSH PRIVATE KEY-----",
].join("\n");
