// How the tests' TypeScript clients (SDK 1.32 and client 2.4 alike) retry a cut stream: soon and
// often, so that a resume shows within a test's time.
export const RECONNECTION = {
  initialReconnectionDelay: 100,
  maxReconnectionDelay: 1000,
  reconnectionDelayGrowFactor: 1.5,
  maxRetries: 5,
};
