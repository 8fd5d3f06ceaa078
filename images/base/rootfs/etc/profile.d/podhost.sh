# Login shells (SSH sessions) get the same PATH as the pod's services: Debian's /etc/profile
# resets PATH and would drop the pod's helpers (pod-reload …) and the user's global npm bin.
PATH="$HOME/.npm-global/bin:/opt/podhost/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH
