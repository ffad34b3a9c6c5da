// Probing a process without signalling it.

/** true while a process with this pid exists (signal 0 probes without signalling) */
export const isAlive = (pid: number | undefined): boolean => {
  if (pid === undefined) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
