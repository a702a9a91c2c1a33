// Checkboxes and radio buttons with the same conventions as Field (ui.tsx): a label tied to each input, a hint
// and the API's messages tied by aria-describedby, messages under the inputs.
import { useId, type ReactNode } from 'react';
import type { FieldDetail } from '../api/errors';
import { FieldErrors } from './ui';

/** One checkbox with its label beside it, a hint under it and the API's messages about it. */
export function Checkbox(props: { label: ReactNode; hint?: ReactNode; checked: boolean; onChange: (checked: boolean) => void; name: string; errors?: FieldDetail[]; disabled?: boolean }) {
  const id = useId();
  const errors = props.errors ?? [];
  const described = [props.hint ? `${id}-hint` : '', errors.length ? `${id}-errors` : ''].filter(Boolean).join(' ');
  return (
    <div className={`check${errors.length ? ' field-invalid' : ''}`}>
      <input
        id={id}
        type="checkbox"
        name={props.name}
        checked={props.checked}
        disabled={props.disabled}
        aria-invalid={errors.length > 0}
        aria-describedby={described || undefined}
        onChange={(e) => props.onChange(e.target.checked)}
      />
      <label htmlFor={id}>{props.label}</label>
      {props.hint ? (
        <p id={`${id}-hint`} className="hint">
          {props.hint}
        </p>
      ) : null}
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </div>
  );
}

export interface Choice<V extends string> {
  value: V;
  label: string;
  hint?: string;
}

/** A fieldset of checkboxes (several values) or radio buttons (one value), with the messages about the whole list. */
export function ChoiceGroup<V extends string>(
  props: { legend: string; hint?: string; name: string; choices: readonly Choice<V>[]; errors?: FieldDetail[]; disabled?: boolean; className?: string } & (
    | { multiple: true; value: readonly string[]; onChange: (value: string[]) => void }
    | { multiple?: false; value: V; onChange: (value: V) => void }
  ),
) {
  const id = useId();
  const errors = props.errors ?? [];
  const described = [props.hint ? `${id}-hint` : '', errors.length ? `${id}-errors` : ''].filter(Boolean).join(' ');
  const isOn = (v: V) => (props.multiple ? props.value.includes(v) : props.value === v);
  const toggle = (v: V, on: boolean) => {
    if (props.multiple) props.onChange(on ? [...props.value.filter((x) => x !== v), v] : props.value.filter((x) => x !== v));
    else if (on) props.onChange(v);
  };
  return (
    <fieldset className={`choices${errors.length ? ' field-invalid' : ''}${props.className ? ` ${props.className}` : ''}`} aria-describedby={described || undefined}>
      <legend>{props.legend}</legend>
      {props.hint ? (
        <p id={`${id}-hint`} className="hint">
          {props.hint}
        </p>
      ) : null}
      <div className="choice-list">
        {props.choices.map((c) => (
          <div className="choice" key={c.value}>
            <input
              id={`${id}-${c.value}`}
              type={props.multiple ? 'checkbox' : 'radio'}
              name={props.name}
              value={c.value}
              checked={isOn(c.value)}
              disabled={props.disabled}
              aria-describedby={c.hint ? `${id}-${c.value}-hint` : undefined}
              onChange={(e) => toggle(c.value, e.target.checked)}
            />
            <label htmlFor={`${id}-${c.value}`}>{c.label}</label>
            {c.hint ? (
              <span id={`${id}-${c.value}-hint`} className="choice-hint">
                {c.hint}
              </span>
            ) : null}
          </div>
        ))}
      </div>
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </fieldset>
  );
}
