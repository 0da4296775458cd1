/** The SDK's version, sent in the User-Agent (`queues-typescript/<VERSION>`); test/ua.test checks it against package.json. */
export const VERSION = '0.1.0';

/** The User-Agent of a client: the SDK and its version, after the application's own product token when it gives one. */
export function userAgent(app: string | undefined): string {
  const sdk = `queues-typescript/${VERSION}`;
  return app ? `${app} ${sdk}` : sdk;
}
