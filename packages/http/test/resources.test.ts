import { createResources } from '../src';

/** Something closable that notes its closing in `log`. */
function thing(name: string, log: string[], fails = false) {
  return {
    name,
    close: () => {
      log.push(name);
      return fails ? Promise.reject(new Error(`${name} failed to close`)) : Promise.resolve();
    },
  };
}

type Thing = ReturnType<typeof thing>;
const closeThing = (made: Thing) => made.close();

describe('createResources', () => {
  it('uses a shared resource as it is and never closes it; makes an absent one and closes it', async () => {
    const log: string[] = [];
    const resources = createResources();
    const shared = thing('shared pool', log);
    const make = jest.fn(() => thing('own bus', log));
    expect(await resources.ownOrShared('database pool', shared, () => thing('unused', log), closeThing)).toBe(shared);
    const bus = await resources.ownOrShared('event bus', undefined, make, closeThing);
    expect(bus.name).toBe('own bus');
    expect(make).toHaveBeenCalledTimes(1);
    expect(resources.closers().map((closer) => closer.name)).toEqual(['event bus']);
    await resources.close();
    expect(log).toEqual(['own bus']);
  });

  it('closes the last made first, through its closers as through close()', async () => {
    const made = async (log: string[]) => {
      const resources = createResources();
      await resources.ownOrShared('pool', undefined, () => thing('pool', log), closeThing);
      await resources.ownOrShared('bus', undefined, () => Promise.resolve(thing('bus', log)), closeThing);
      resources.own('engine', thing('engine', log), closeThing);
      return resources;
    };
    const byClosers: string[] = [];
    const closers = (await made(byClosers)).closers();
    expect(closers.map((closer) => closer.name)).toEqual(['engine', 'bus', 'pool']);
    for (const closer of closers) await closer.close();
    expect(byClosers).toEqual(['engine', 'bus', 'pool']);

    const byClose: string[] = [];
    const resources = await made(byClose);
    await resources.close();
    await resources.close();
    expect(byClose).toEqual(['engine', 'bus', 'pool']);
  });

  it('closes every other resource when one fails to close, then throws the first failure', async () => {
    const log: string[] = [];
    const resources = createResources();
    resources.own('pool', thing('pool', log), closeThing);
    resources.own('bus', thing('bus', log, true), closeThing);
    resources.own('engine', thing('engine', log, true), closeThing);
    await expect(resources.close()).rejects.toThrow('engine failed to close');
    expect(log).toEqual(['engine', 'bus', 'pool']);
  });

  it('closes what was made before a resource that cannot be made, and throws its failure', async () => {
    const log: string[] = [];
    const resources = createResources();
    await resources.ownOrShared('pool', undefined, () => thing('pool', log), closeThing);
    await resources.ownOrShared('bus', thing('shared bus', log), () => thing('unused', log), closeThing);
    const refused = resources.ownOrShared<Thing>(
      'engine',
      undefined,
      () => {
        throw new Error('no engine');
      },
      closeThing,
    );
    await expect(refused).rejects.toThrow('no engine');
    expect(log).toEqual(['pool']);
    expect(resources.closers()).toEqual([]);
  });
});
