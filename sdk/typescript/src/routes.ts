/**
 * Every HTTP route the client calls, and the client methods that call it. The tests check
 * this table against openapi.yaml: each operation there must have a route here with the same
 * method and path, and each route's methods must exist on QueuesClient. Routes may be here
 * before openapi.yaml describes them (the project routes of the tenancy work).
 */
export const routes = {
  createProject: { method: 'POST', path: '/v1/projects', client: ['createProject'] },
  listProjects: { method: 'GET', path: '/v1/projects', client: ['listProjects'] },
  getProject: { method: 'GET', path: '/v1/projects/{project}', client: ['getProject'] },
  updateProject: { method: 'PATCH', path: '/v1/projects/{project}', client: ['updateProject'] },
  getProjectUsage: { method: 'GET', path: '/v1/projects/{project}/usage', client: ['getProjectUsage'] },
  getCurrentProject: { method: 'GET', path: '/v1/project', client: ['getCurrentProject'] },
  getCurrentProjectUsage: { method: 'GET', path: '/v1/project/usage', client: ['getCurrentProjectUsage'] },
  createToken: { method: 'POST', path: '/v1/projects/{project}/tokens', client: ['createToken'] },
  revokeToken: { method: 'DELETE', path: '/v1/projects/{project}/tokens/{token}', client: ['revokeToken'] },
  getSQSCredentials: {
    method: 'GET',
    path: '/v1/projects/{project}/tokens/{token}/sqs-credentials',
    client: ['getSQSCredentials'],
  },
  createQueue: { method: 'POST', path: '/v1/queues', client: ['createQueue'] },
  listQueues: { method: 'GET', path: '/v1/queues', client: ['listQueues', 'allQueues'] },
  getQueue: { method: 'GET', path: '/v1/queues/{queue}', client: ['getQueue'] },
  updateQueue: { method: 'PATCH', path: '/v1/queues/{queue}', client: ['updateQueue'] },
  deleteQueue: { method: 'DELETE', path: '/v1/queues/{queue}', client: ['deleteQueue'] },
  purgeQueue: { method: 'POST', path: '/v1/queues/{queue}/purge', client: ['purgeQueue'] },
  sendMessages: { method: 'POST', path: '/v1/queues/{queue}/messages', client: ['sendMessages', 'send'] },
  browseMessages: { method: 'GET', path: '/v1/queues/{queue}/messages', client: ['browseMessages'] },
  deleteMessage: { method: 'DELETE', path: '/v1/queues/{queue}/messages/{messageId}', client: ['deleteMessage'] },
  receiveMessages: { method: 'POST', path: '/v1/queues/{queue}/receive', client: ['receiveMessages', 'receive'] },
  listGroups: { method: 'GET', path: '/v1/queues/{queue}/groups', client: ['listGroups'] },
  listConsumers: { method: 'GET', path: '/v1/queues/{queue}/consumers', client: ['listConsumers'] },
  deleteGroup: { method: 'DELETE', path: '/v1/queues/{queue}/groups/{groupId}', client: ['deleteGroup'] },
  createSubscription: { method: 'POST', path: '/v1/queues/{queue}/subscription', client: ['createSubscription'] },
  getSubscription: { method: 'GET', path: '/v1/queues/{queue}/subscription', client: ['getSubscription'] },
  updateSubscription: { method: 'PATCH', path: '/v1/queues/{queue}/subscription', client: ['updateSubscription'] },
  deleteSubscription: { method: 'DELETE', path: '/v1/queues/{queue}/subscription', client: ['deleteSubscription'] },
  rotateSubscriptionSecret: {
    method: 'POST',
    path: '/v1/queues/{queue}/subscription/rotate-secret',
    client: ['rotateSubscriptionSecret'],
  },
  listSubscriptionAttempts: {
    method: 'GET',
    path: '/v1/queues/{queue}/subscription/attempts',
    client: ['listSubscriptionAttempts'],
  },
  startMoveTask: { method: 'POST', path: '/v1/queues/{queue}/move-tasks', client: ['startMoveTask'] },
  listMoveTasks: { method: 'GET', path: '/v1/queues/{queue}/move-tasks', client: ['listMoveTasks'] },
  getMoveTask: { method: 'GET', path: '/v1/queues/{queue}/move-tasks/{task}', client: ['getMoveTask'] },
  cancelMoveTask: { method: 'POST', path: '/v1/queues/{queue}/move-tasks/{task}/cancel', client: ['cancelMoveTask'] },
  ackReceipts: { method: 'POST', path: '/v1/receipts/ack', client: ['ack', 'ackBatch'] },
  cancelReceipts: { method: 'POST', path: '/v1/receipts/cancel', client: ['cancel', 'cancelBatch'] },
  changeVisibility: {
    method: 'POST',
    path: '/v1/receipts/visibility',
    client: ['changeVisibility', 'changeVisibilityBatch'],
  },
  deadLetterReceipts: { method: 'POST', path: '/v1/receipts/dead-letter', client: ['deadLetter', 'deadLetterBatch'] },
  getHealth: { method: 'GET', path: '/healthz', client: ['health'] },
  getReadiness: { method: 'GET', path: '/readyz', client: ['ready'] },
} as const satisfies Record<string, { method: string; path: string; client: readonly string[] }>;

export type RouteName = keyof typeof routes;
