"""`grade doctor`: what the sandbox on this machine gives, and what it does not."""
import click


@click.command("doctor")
def doctor():
    """Show each isolation layer of the grader's sandbox on this machine: present or not,
    and what is not covered without it."""
    from backprop_traps.grader.sandbox.doctor import layers, memory_meter, notes
    found = layers()
    for layer in found:
        mark = click.style("yes", fg="green") if layer.present else click.style("NO ", fg="red")
        click.echo(f"  {mark}  {layer.name}: {layer.detail}")
        if not layer.present:
            click.echo(f"        without it: {layer.without}")
    missing = [layer.name for layer in found if not layer.present]
    click.echo("Every sandbox layer is in place." if not missing else
               f"Missing: {', '.join(missing)}. Grading still works; see above for what that leaves open.")
    click.echo(f"Memory: {memory_meter()}.")
    for note in notes():
        click.echo(f"Note: {note}.")
