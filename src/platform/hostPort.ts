// `HOST:PORT` as typed on a command line (`[V6]:PORT` for IPv6): serve's --listen and a cluster runner's
// --runner-listen read it the same way.

export interface HostPort {
  readonly host: string
  readonly port: number
}

/** The host and port, or the problem in words. Pure. */
export const parseHostPort = (text: string): HostPort | string => {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text)
  if (match === null) return `expected HOST:PORT, got ${JSON.stringify(text)}`
  const port = Number(match[3])
  if (port > 65535) return `port ${port} is out of range`
  return { host: match[1] ?? match[2]!, port }
}
